import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { UpstreamError } from '../../../src/engine/types.js';
import { anthropicAdapter } from '../../../src/providers/anthropic/index.js';
import { providers } from '../../../src/providers/registry.js';
import { baseRequest, collect, fakeUpstream, targetFor, textOf, type FakeUpstream } from './support.js';

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/anthropic/${name}`, import.meta.url));

const MESSAGE = {
  id: 'msg_01Http', type: 'message', role: 'assistant', model: 'claude-3-5-haiku-20241022',
  content: [{ type: 'text', text: 'Hello there.' }], stop_reason: 'end_turn', stop_sequence: null,
  usage: { input_tokens: 9, output_tokens: 4, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
};

describe('anthropic adapter over HTTP (local fake upstream)', () => {
  let upstream: FakeUpstream;
  /** What the next request gets: status, headers, body (a string, or bytes written then the socket cut). */
  let answer: { status: number; headers?: Record<string, string>; body: string | Buffer; cut?: boolean; hold?: boolean };
  /** Resolves when the upstream sees the client side of the current request go away. */
  let upstreamClosed: Promise<void>;

  before(async () => {
    upstream = await fakeUpstream((_req, res) => {
      upstreamClosed = new Promise((resolve) => res.on('close', () => resolve()));
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      if (answer.hold) res.write(answer.body); // and never end: only the client can finish this one
      else if (answer.cut) {
        res.write(answer.body);
        setImmediate(() => res.socket?.destroy());
      } else res.end(answer.body);
    });
  });
  after(() => upstream.close());
  beforeEach(() => {
    upstream.requests.length = 0;
  });

  it('is the registry\'s adapter for the anthropic wire format', () => {
    expect(providers.anthropic).to.equal(anthropicAdapter);
  });

  it('posts to /v1/messages with the key and version headers, and maps the answer', async () => {
    answer = { status: 200, body: JSON.stringify(MESSAGE) };
    const req = baseRequest({ messages: [{ role: 'system', content: 'Be kind.' }, { role: 'user', content: 'Hi' }], temperature: 0.5 });
    const result = await anthropicAdapter.chat(req, targetFor(upstream.url, 'claude-3-5-haiku-20241022', 'sk-ant-test-1'), new AbortController().signal);
    const seen = upstream.requests[0]!;
    expect(seen.method).to.equal('POST');
    expect(seen.url).to.equal('/v1/messages');
    expect(seen.headers['x-api-key']).to.equal('sk-ant-test-1');
    expect(seen.headers['anthropic-version']).to.equal('2023-06-01');
    expect(seen.headers['content-type']).to.equal('application/json');
    expect(seen.headers.authorization).to.equal(undefined);
    expect(JSON.parse(seen.body)).to.deep.equal({
      model: 'claude-3-5-haiku-20241022', max_tokens: 4096, stream: false, temperature: 0.5,
      system: [{ type: 'text', text: 'Be kind.' }], messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    });
    expect(result.choices[0]).to.include({ content: 'Hello there.', finishReason: 'stop' });
    expect(result.usage).to.include({ promptTokens: 9, completionTokens: 4 });
    expect(result).to.not.have.property('anthropicMessage');
  });

  it('native: sends the client\'s body (upstream model, no gateway fields) and returns the raw message too', async () => {
    answer = { status: 200, body: JSON.stringify(MESSAGE) };
    const anthropicBody = {
      model: 'anthropic/claude-3-5-haiku', max_tokens: 50, top_k: 3, provider: 'anthropic',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
    };
    const result = await anthropicAdapter.chat(baseRequest({ anthropicBody }), targetFor(upstream.url, 'claude-3-5-haiku-20241022'), new AbortController().signal);
    expect(JSON.parse(upstream.requests[0]!.body)).to.deep.equal({
      model: 'claude-3-5-haiku-20241022', max_tokens: 50, top_k: 3, stream: false,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
    });
    expect(result.anthropicMessage).to.deep.equal(MESSAGE);
    expect(result.choices[0]!.content).to.equal('Hello there.');
  });

  it('streams: resolves on the 2xx, then maps the events', async () => {
    answer = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: fixture('tools.txt') };
    const stream = await anthropicAdapter.chatStream(baseRequest({ stream: true }), targetFor(upstream.url, 'claude-3-5-haiku-20241022'), new AbortController().signal);
    expect(JSON.parse(upstream.requests[0]!.body).stream).to.equal(true);
    expect(upstream.requests[0]!.headers.accept).to.equal('text/event-stream');
    const { events, error } = await collect(stream);
    expect(error).to.equal(undefined);
    expect(textOf(events)).to.equal("I'll check both cities.");
    expect(events.at(-1)).to.deep.equal({ type: 'end' });
  });

  it('a stream cut by the upstream (socket closed before message_stop) is stream_broken', async () => {
    answer = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: fixture('text.txt').subarray(0, 700), cut: true };
    const stream = await anthropicAdapter.chatStream(baseRequest({ stream: true }), targetFor(upstream.url, 'm'), new AbortController().signal);
    const { events, error } = await collect(stream);
    expect(events[0]).to.include({ type: 'start' });
    expect(events.some((e) => e.type === 'end')).to.equal(false);
    expect(error).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
  });

  it('a client abort mid-stream closes the upstream request and is not reported as an upstream fault', async () => {
    answer = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: fixture('text.txt').subarray(0, 500), hold: true };
    const ac = new AbortController();
    const stream = await anthropicAdapter.chatStream(baseRequest({ stream: true }), targetFor(upstream.url, 'm'), ac.signal);
    const it = stream[Symbol.asyncIterator]();
    expect((await it.next()).value).to.include({ type: 'start' });
    ac.abort();
    const err = await it.next().then(() => undefined, (e) => e);
    expect(err).to.be.instanceOf(Error);
    expect(err).to.not.be.instanceOf(UpstreamError);
    await upstreamClosed; // resolves only if the upstream connection was really closed
  });

  const errorBody = (type: string, message: string) => JSON.stringify({ type: 'error', error: { type, message } });

  it('429 with Retry-After is rate_limited and keeps the delay', async () => {
    answer = { status: 429, headers: { 'retry-after': '7' }, body: errorBody('rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit') };
    const err = await anthropicAdapter.chat(baseRequest(), targetFor(upstream.url, 'm'), new AbortController().signal).catch((e) => e);
    expect(err).to.be.instanceOf(UpstreamError);
    expect(err).to.include({ kind: 'rate_limited', status: 429, retryAfterMs: 7000 });
    expect(err.message).to.contain('per-minute rate limit');
  });

  it('maps 529 overloaded, 401, 404 and 400 (also before a stream starts)', async () => {
    const cases: Array<[number, string, string]> = [
      [529, 'overloaded_error', 'server_error'],
      [401, 'authentication_error', 'auth'],
      [404, 'not_found_error', 'not_found'],
      [400, 'invalid_request_error', 'bad_request'],
    ];
    for (const [status, type, kind] of cases) {
      answer = { status, body: errorBody(type, 'nope') };
      const err = await anthropicAdapter.chatStream(baseRequest({ stream: true }), targetFor(upstream.url, 'm'), new AbortController().signal).catch((e) => e);
      expect(err, `HTTP ${status}`).to.be.instanceOf(UpstreamError).and.include({ kind, status });
    }
  });

  it('a 200 whose body is not JSON is an invalid response', async () => {
    answer = { status: 200, body: '<html>proxy error</html>' };
    const err = await anthropicAdapter.chat(baseRequest(), targetFor(upstream.url, 'm'), new AbortController().signal).catch((e) => e);
    expect(err).to.be.instanceOf(UpstreamError).with.property('kind', 'invalid_response');
  });
});
