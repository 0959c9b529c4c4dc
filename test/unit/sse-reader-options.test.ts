import { expect } from 'chai';
import { readSse, type SseEvent } from '../../src/stream/sse.js';

async function* once(text: string): AsyncGenerator<Uint8Array> {
  yield Buffer.from(text);
}

async function read(text: string, opts: Parameters<typeof readSse>[1] = {}): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const ev of readSse(once(text), opts)) out.push(ev);
  return out;
}

describe('SSE reader options', () => {
  it('onOtherLine sees lines that are not SSE fields (a raw JSON body), never comments or known fields', async () => {
    const other: string[] = [];
    const events = await read('data: a\nid: 1\nretry: 10\n: keep-alive\n\n{\n  "error": {"code": 499}\n}', { onOtherLine: (l) => other.push(l) });
    expect(events).to.deep.equal([{ event: undefined, data: 'a', id: '1' }]);
    expect(other).to.deep.equal(['{', '  "error": {"code": 499}', '}']);
  });

  it('dispatchUnterminatedLast: a last event whose lines ended is dispatched; a half line never is', async () => {
    expect(await read('data: a\n\ndata: b\r\n')).to.deep.equal([{ event: undefined, data: 'a' }]);
    expect(await read('data: a\n\nevent: x\ndata: b\r\n', { dispatchUnterminatedLast: true })).to.deep.equal([
      { event: undefined, data: 'a' },
      { event: 'x', data: 'b' },
    ]);
    expect(await read('data: a\n\ndata: b', { dispatchUnterminatedLast: true })).to.deep.equal([{ event: undefined, data: 'a' }]);
    expect(await read('data: a\n\n', { dispatchUnterminatedLast: true })).to.deep.equal([{ event: undefined, data: 'a' }]);
  });
});
