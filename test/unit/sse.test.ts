import { expect } from 'chai';
import { readSse, type SseEvent } from '../../src/stream/sse.js';

async function collect(chunks: Array<string | Uint8Array>): Promise<SseEvent[]> {
  async function* src() { for (const c of chunks) yield c; }
  const out: SseEvent[] = [];
  for await (const ev of readSse(src())) out.push(ev);
  return out;
}

/** Every way of cutting `bytes` into pieces of `size`. */
function split(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.slice(i, i + size));
  return out;
}

describe('unit: SSE reader', () => {
  const stream = 'event: message_start\ndata: {"a":1}\n\n: PROCESSING\n\ndata: {"text":"héllo → 世界 🎉"}\r\n\r\ndata: line1\ndata: line2\n\nid: 7\ndata: [DONE]\n\n';
  const expected: SseEvent[] = [
    { event: 'message_start', data: '{"a":1}' },
    { event: undefined, data: '{"text":"héllo → 世界 🎉"}' },
    { event: undefined, data: 'line1\nline2' },
    { event: undefined, data: '[DONE]', id: '7' },
  ];

  it('parses events, drops comments and keep-alives, joins multi-line data, handles CRLF', async () => {
    expect(await collect([stream])).to.deep.equal(expected);
  });

  it('gives the same events however the bytes are split (1 byte, mid-UTF-8, mid-CRLF)', async () => {
    const bytes = new TextEncoder().encode(stream);
    for (const size of [1, 2, 3, 5, 7, 13, 64]) {
      expect(await collect(split(bytes, size)), `chunks of ${size}`).to.deep.equal(expected);
    }
  });

  it('does not dispatch a final event that lost its blank line (a cut stream)', async () => {
    expect(await collect(['data: {"a":1}\n\ndata: {"partial"'])).to.deep.equal([{ event: undefined, data: '{"a":1}' }]);
  });

  it('drops a byte-order mark at the start of the stream only, and replaces bytes that are not UTF-8', async () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('data: a\n\ndata: \ufeffb '), 0xff, ...new TextEncoder().encode('\n\n')]);
    const want = [{ event: undefined, data: 'a' }, { event: undefined, data: '\ufeffb \ufffd' }];
    for (const size of [1, 2, 4, bytes.length]) expect(await collect(split(bytes, size)), `chunks of ${size}`).to.deep.equal(want);
  });

  it('a data field\'s value: one leading space dropped, however the line is written (the `data: ` lines\' shortcut included)', async () => {
    const lines = 'data: a\ndata:b\ndata:  c\ndata: \ndata\ndata:\ndata: d: e\n\ndata: \n\ndata:  \n\n';
    const want = [{ event: undefined, data: 'a\nb\n c\n\n\n\nd: e' }, { event: undefined, data: '' }, { event: undefined, data: ' ' }];
    expect(await collect([lines])).to.deep.equal(want);
    const bytes = new TextEncoder().encode(lines);
    for (const size of [1, 3, 7]) expect(await collect(split(bytes, size)), `chunks of ${size}`).to.deep.equal(want);
  });

  it('a one-line event (`data: …` and its blank line) is the same event as the general rule gives, beside events named, with an id or of many lines', async () => {
    const text = 'data: 1\n\nevent: e\ndata: 2\n\ndata: 3\ndata: 4\n\ndata: 5\n\nid: 9\ndata: 6\n\ndata: 7\n\n';
    const want = [
      { event: undefined, data: '1' }, { event: 'e', data: '2' }, { event: undefined, data: '3\n4' }, { event: undefined, data: '5' },
      // the last event id stays for the events after it
      { event: undefined, data: '6', id: '9' }, { event: undefined, data: '7', id: '9' },
    ];
    expect(await collect([text])).to.deep.equal(want);
    const bytes = new TextEncoder().encode(text);
    for (const size of [1, 2, 8, 9, 10]) expect(await collect(split(bytes, size)), `chunks of ${size}`).to.deep.equal(want);
    // the same value as the general rule: a line's value up to its LF, the blank line stepped over
    expect(await collect(['data: a b \n\ndata: c\r\n\r\n'])).to.deep.equal([{ event: undefined, data: 'a b ' }, { event: undefined, data: 'c' }]);
  });

  it('treats a lone CR as a line end', async () => {
    expect(await collect(['data: x\r\rdata: y\r', '\r'])).to.deep.equal([{ event: undefined, data: 'x' }, { event: undefined, data: 'y' }]);
  });
});
