import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { UpstreamError, type Usage } from '../../../src/engine/types.js';
import { fromGeminiResponse, geminiHttpError } from '../../../src/providers/gemini/response.js';
import { geminiEvents } from '../../../src/providers/gemini/stream.js';
import { NOT_CHAT, RECORDED, STREAMS, UNARY, type Expected, type Text } from './gemini-expected.js';
import { bodyOf, chunkings, collect, textOf, thinkingOf, toolCallsOf } from './support.js';

const files = (prefix: string) =>
  ['googleai', 'vertexai'].flatMap((dir) => readdirSync(`${RECORDED}/${dir}`).filter((f) => f.startsWith(prefix) && !NOT_CHAT.test(f)).map((f) => `${dir}/${f}`));

const usageOf = (u: [number, number, number, number]): Usage => ({
  promptTokens: u[0], completionTokens: u[1], cachedTokens: u[2], cacheWriteTokens: 0, reasoningTokens: u[3],
});

function expectText(actual: string | null, want: Text | null, what: string) {
  if (want === null) return expect(actual, what).to.equal(null);
  expect(actual, what).to.be.a('string');
  expect(actual!.length, `${what} length`).to.equal(want.length);
  expect(actual!.startsWith(want.starts), `${what} starts with ${JSON.stringify(want.starts)}`).to.equal(true);
  expect(actual!.endsWith(want.ends), `${what} ends with ${JSON.stringify(want.ends)}`).to.equal(true);
}

describe('gemini fixtures: every recorded answer has an expectation', () => {
  it('unary and streaming tables name exactly the recorded generateContent files', () => {
    expect(Object.keys(UNARY).sort()).to.deep.equal(files('unary-').sort());
    expect(Object.keys(STREAMS).sort()).to.deep.equal(files('streaming-').sort());
    expect(Object.keys(UNARY)).to.have.length.above(60);
    expect(Object.keys(STREAMS)).to.have.length.above(35);
  });
});

describe('gemini fixtures: unary response and error mapping', () => {
  for (const [file, want] of Object.entries(UNARY)) {
    it(file, () => check(file, want));
  }

  function check(file: string, want: Expected) {
    const raw = readFileSync(`${RECORDED}/${file}`, 'utf8');
    if ('http' in want) {
      const err = geminiHttpError(want.http, {}, raw);
      expect(err).to.include({ kind: want.kind, status: want.http });
      return;
    }
    if ('error' in want) {
      expect(() => fromGeminiResponse(JSON.parse(raw), 'gemini-test')).to.throw(UpstreamError).with.property('kind', want.error);
      return;
    }
    const r = fromGeminiResponse(JSON.parse(raw), 'gemini-test');
    expect(r.choices).to.have.length(1);
    const c = r.choices[0]!;
    expect(c.finishReason).to.equal(want.finish);
    expectText(c.content, want.text, 'content');
    expect((c.thinking ?? []).reduce((n, t) => n + t.text.length, 0), 'thinking length').to.equal(want.thinking ?? 0);
    expect((c.toolCalls ?? []).map((t) => [t.name, t.arguments])).to.deep.equal(want.calls ?? []);
    expect((c.toolCalls ?? []).map((t) => t.id)).to.deep.equal((want.calls ?? []).map((_, i) => `call_${i}`));
    expect(r.usage).to.deep.equal(want.usage ? usageOf(want.usage) : null);
  }
});

describe('gemini fixtures: stream mapping, whole and split at awkward boundaries', () => {
  for (const [file, want] of Object.entries(STREAMS)) {
    const raw = readFileSync(`${RECORDED}/${file}`);
    if ('http' in want) {
      it(`${file} (an HTTP error body)`, () => {
        expect(geminiHttpError(want.http, {}, raw.toString('utf8'))).to.include({ kind: want.kind, status: want.http });
      });
      continue;
    }
    for (const { name, chunks } of chunkings(raw)) {
      it(`${file}, ${name} chunks`, async () => check(await collect(geminiEvents(bodyOf(chunks), 'gemini-test')), want));
    }
  }

  async function check({ events, error }: Awaited<ReturnType<typeof collect>>, want: Expected) {
    if ('http' in want) throw new Error('unreachable');
    if ('error' in want) {
      expect(error).to.be.instanceOf(UpstreamError).with.property('kind', want.error);
      if (want.text) expectText(textOf(events), want.text, 'text before the failure');
      expect(events.some((e) => e.type === 'end')).to.equal(false);
      return;
    }
    expect(error, String(error)).to.equal(undefined);
    const start = events[0]!;
    expect(start.type).to.equal('start');
    if (start.type === 'start') {
      if (want.id) expect(start.id).to.equal(want.id);
      else expect(start.id).to.match(/^gen-[0-9a-f]{24}$/);
      expect(start.model).to.equal(want.model ?? 'gemini-test');
    }
    expect(events.filter((e) => e.type === 'start')).to.have.length(1);
    expectText(textOf(events), want.text ?? { length: 0, starts: '', ends: '' }, 'text');
    expect(thinkingOf(events).length, 'thinking length').to.equal(want.thinking ?? 0);
    expect(toolCallsOf(events)).to.deep.equal((want.calls ?? []).map(([name, args], i) => ({ id: `call_${i}`, name, arguments: args })));
    // The closing events come last, in order: one finish, the usage when reported, then end.
    const tail = want.usage
      ? [{ type: 'finish', index: 0, finishReason: want.finish }, { type: 'usage', usage: usageOf(want.usage) }, { type: 'end' }]
      : [{ type: 'finish', index: 0, finishReason: want.finish }, { type: 'end' }];
    expect(events.slice(-tail.length)).to.deep.equal(tail);
    expect(events.filter((e) => e.type === 'finish')).to.have.length(1);
  }

  it('a stream cut mid-event (no blank line, no finish) is stream_broken, with the text before it delivered', async () => {
    const raw = readFileSync(`${RECORDED}/googleai/streaming-success-basic-reply-short.txt`);
    const cut = raw.subarray(0, raw.indexOf('"finishReason"'));
    const { events, error } = await collect(geminiEvents(bodyOf([cut]), 'gemini-test'));
    expect(textOf(events)).to.equal('The capital of Wyoming');
    expect(error).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
  });

  it('an error object framed as a data event fails the stream with its kind', async () => {
    const body = Buffer.from('data: {"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]}\n\ndata: {"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}\n\n');
    const { events, error } = await collect(geminiEvents(bodyOf([body]), 'gemini-test'));
    expect(textOf(events)).to.equal('Hi');
    expect(error).to.be.instanceOf(UpstreamError).with.property('kind', 'rate_limited');
  });

  it('keeps candidates apart and emits a finish for each', async () => {
    const body = Buffer.from(
      'data: {"candidates":[{"index":0,"content":{"parts":[{"text":"A"}]}},{"index":1,"content":{"parts":[{"functionCall":{"name":"f","args":{"x":1}}}]}}]}\n\n' +
        'data: {"candidates":[{"index":0,"content":{"parts":[{"text":"B"}]},"finishReason":"MAX_TOKENS"},{"index":1,"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4}}\n\n',
    );
    const { events, error } = await collect(geminiEvents(bodyOf([body]), 'gemini-test'));
    expect(error).to.equal(undefined);
    expect(textOf(events, 0)).to.equal('AB');
    expect(toolCallsOf(events, 1)).to.deep.equal([{ id: 'call_0', name: 'f', arguments: '{"x":1}' }]);
    expect(events.slice(-4)).to.deep.equal([
      { type: 'finish', index: 0, finishReason: 'length' },
      { type: 'finish', index: 1, finishReason: 'tool_calls' },
      { type: 'usage', usage: usageOf([3, 4, 0, 0]) },
      { type: 'end' },
    ]);
  });
});
