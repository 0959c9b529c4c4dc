import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { UpstreamError } from '../../../src/engine/types.js';
import { geminiAdapter } from '../../../src/providers/gemini/index.js';
import { providers } from '../../../src/providers/registry.js';
import { RECORDED, STREAMS, UNARY } from './gemini-expected.js';
import { baseRequest, collect, fakeUpstream, targetFor, textOf, type FakeUpstream } from './support.js';

const recorded = (file: string) => readFileSync(`${RECORDED}/${file}`);

describe('gemini adapter over HTTP (local fake upstream)', () => {
  let upstream: FakeUpstream;
  let answer: { status: number; headers?: Record<string, string>; body: string | Buffer; cut?: boolean };

  before(async () => {
    upstream = await fakeUpstream((_req, res) => {
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      if (answer.cut) {
        res.write(answer.body);
        setImmediate(() => res.socket?.destroy());
      } else res.end(answer.body);
    });
  });
  after(() => upstream.close());
  beforeEach(() => {
    upstream.requests.length = 0;
  });

  it('is the registry\'s adapter for the gemini wire format (openai is left to the integrator)', () => {
    expect(providers.google).to.equal(geminiAdapter);
    expect(providers.openai).to.not.equal(geminiAdapter);
  });

  it('posts generateContent with the key in x-goog-api-key (never the URL) and maps the answer', async () => {
    answer = { status: 200, body: recorded('googleai/unary-success-basic-reply-short.json') };
    const req = baseRequest({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Where is Google?' }], maxTokens: 64 });
    const r = await geminiAdapter.chat(req, targetFor(upstream.url, 'gemini-2.0-flash', 'AIza-test-key'), new AbortController().signal);
    const seen = upstream.requests[0]!;
    expect(seen.method).to.equal('POST');
    expect(seen.url).to.equal('/v1beta/models/gemini-2.0-flash:generateContent');
    expect(seen.headers['x-goog-api-key']).to.equal('AIza-test-key');
    expect(seen.headers['content-type']).to.equal('application/json');
    expect(seen.url).to.not.contain('key=');
    expect(JSON.parse(seen.body)).to.deep.equal({
      contents: [{ role: 'user', parts: [{ text: 'Where is Google?' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { maxOutputTokens: 64 },
    });
    expect(r.model).to.equal('gemini-2.0-flash');
    expect(r.choices[0]!.content).to.equal("Google's headquarters, also known as the Googleplex, is located in **Mountain View, California**.\n");
    expect(r.usage).to.include({ promptTokens: 7, completionTokens: 22 });
  });

  it('streams from streamGenerateContent?alt=sse', async () => {
    answer = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: recorded('googleai/streaming-success-basic-reply-short.txt') };
    const stream = await geminiAdapter.chatStream(baseRequest({ stream: true }), targetFor(upstream.url, 'gemini-2.0-flash'), new AbortController().signal);
    expect(upstream.requests[0]!.url).to.equal('/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');
    expect(upstream.requests[0]!.headers['x-goog-api-key']).to.equal('test-key-123');
    const { events, error } = await collect(stream);
    expect(error).to.equal(undefined);
    expect(textOf(events)).to.equal('The capital of Wyoming is **Cheyenne**.\n');
    expect(events.at(-1)).to.deep.equal({ type: 'end' });
  });

  it('a stream whose connection drops before a finish reason is stream_broken', async () => {
    const raw = recorded('googleai/streaming-success-basic-reply-long.txt');
    answer = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: raw.subarray(0, 1500), cut: true };
    const stream = await geminiAdapter.chatStream(baseRequest({ stream: true }), targetFor(upstream.url, 'gemini-2.0-flash'), new AbortController().signal);
    const { events, error } = await collect(stream);
    expect(textOf(events).startsWith("Okay, let's dive into")).to.equal(true);
    expect(events.some((e) => e.type === 'end' || e.type === 'finish')).to.equal(false);
    expect(error).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
  });

  it('429 with Retry-After is rate_limited and keeps the delay', async () => {
    answer = { status: 429, headers: { 'retry-after': '12' }, body: recorded('vertexai/unary-failure-quota-exceeded.json') };
    const err = await geminiAdapter.chat(baseRequest(), targetFor(upstream.url, 'gemini-2.0-flash'), new AbortController().signal).catch((e) => e);
    expect(err).to.be.instanceOf(UpstreamError).and.include({ kind: 'rate_limited', status: 429, retryAfterMs: 12000 });
    expect(err.message).to.contain('Quota exceeded');
  });

  // Every recorded error body, served with its own status, before a unary call and before a stream starts.
  const httpFixtures = [...Object.entries(UNARY), ...Object.entries(STREAMS)].flatMap(([file, want]) => ('http' in want ? [{ file, ...want }] : []));
  for (const { file, http, kind } of httpFixtures) {
    it(`HTTP ${http} ${file} -> ${kind}`, async () => {
      answer = { status: http, headers: file.endsWith('.html') ? { 'content-type': 'text/html' } : {}, body: recorded(file) };
      const target = targetFor(upstream.url, 'gemini-2.0-flash');
      const call = file.includes('streaming-')
        ? geminiAdapter.chatStream(baseRequest({ stream: true }), target, new AbortController().signal)
        : geminiAdapter.chat(baseRequest(), target, new AbortController().signal);
      const err = await call.then(() => undefined, (e) => e);
      expect(err).to.be.instanceOf(UpstreamError).and.include({ kind, status: http });
      // The key Google echoes in a DebugInfo detail never reaches the message.
      expect(err.message).to.not.match(/AIzv00G7|key1234/);
      if (file.includes('unsupported-user-location')) expect(err.message).to.contain('User location is not supported');
    });
  }
});
