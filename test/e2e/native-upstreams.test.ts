/**
 * The official `openai` package against /v1/chat/completions, served by the native Anthropic and Gemini
 * adapters (the simulator speaking each format), plus what routing does around them: failover before the
 * first byte, first-byte timeouts, the circuit breaker and a `provider` pin.
 * Prices: $1/M prompt, $2/M completion, $0.25/M cached. Tokens: prompt = ceil(chars/4) per message text,
 * completion = words (see test/support/simulator.ts).
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import { offer } from '../support/catalog.js';
import { startE2E, usageRows, SIM_KEY, type E2E } from '../support/e2e.js';
import { Breakers } from '../../src/engine/breaker.js';

const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } } }];
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');

describe('e2e: Anthropic- and Gemini-native upstreams behind the OpenAI API', function () {
  this.timeout(30_000);
  let e: E2E;
  let key: string;
  let userId: number;

  before(async () => {
    e = await startE2E({
      gateways: { anthropic: 'anthropic', google: 'gemini', groq: 'openai' },
      // 3 consecutive failures open a breaker; no half-open trial within the test run
      services: { breakers: new Breakers(3, 600_000) },
      offers: [
        offer('anthropic', 'sim/echo', 'claude/echo'),
        offer('google', 'models/sim/echo', 'gem/echo'),
        offer('anthropic', 'sim/tool-call', 'claude/tool'),
        offer('google', 'models/sim/tool-call', 'gem/tool'),
        offer('anthropic', 'sim/cached', 'claude/cached'),
        offer('anthropic', 'sim/error-500', 'mix/failover'),
        offer('google', 'models/sim/echo', 'mix/failover'),
        offer('anthropic', 'sim/echo', 'mix/pinned'),
        offer('google', 'models/sim/echo', 'mix/pinned'),
        offer('anthropic', 'sim/error-503', 'mix/dead'),
        offer('anthropic', 'sim/error-500', 'mix/skip'),
        offer('google', 'models/sim/echo', 'mix/skip'),
      ],
    });
    ({ key, userId } = await e.gateway.newKey(1));
  });
  after(async () => e?.close());
  beforeEach(() => e.sim.reset());

  const client = () => new OpenAI({ apiKey: key, baseURL: `${e.origin}/v1`, maxRetries: 0 });
  const lastRow = async () => (await usageRows(e.gateway, userId)).at(-1)!;
  const ask = (model: string, content: OpenAI.ChatCompletionMessageParam['content'] = 'hello', extra: Record<string, unknown> = {}) =>
    client().chat.completions.create({ model, messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content } as OpenAI.ChatCompletionMessageParam], ...extra } as OpenAI.ChatCompletionCreateParamsNonStreaming).withResponse();

  for (const [model, format] of [['claude/echo', 'anthropic'], ['gem/echo', 'gemini']] as const) {
    describe(`${format} upstream`, () => {
      it('plain completion: the OpenAI shape, exact usage and cost, the request in the native format', async () => {
        const before = await e.gateway.store.credits.balance(userId);
        const { data, response } = await ask(model);
        expect(data.object).to.equal('chat.completion');
        expect(data.model).to.equal(model);
        expect(data.choices[0].message).to.include({ role: 'assistant', content: 'Echo: hello' });
        expect(data.choices[0].finish_reason).to.equal('stop');
        // system ceil(14/4) = 4 + "hello" 2 = 6 prompt; 2 words
        expect(data.usage).to.include({ prompt_tokens: 6, completion_tokens: 2, total_tokens: 8 });
        expect((data as any).gateway_usage.cost_usd).to.be.closeTo(10e-6, 1e-12);
        expect(response.headers.get('x-gateway-provider')).to.equal(format === 'anthropic' ? 'anthropic' : 'google');
        expect(await e.gateway.store.credits.balance(userId)).to.equal(before - 10_000);
        expect(await lastRow()).to.include({ status: 'success', model, prompt_tokens: 6, completion_tokens: 2, cost_nano: 10_000 });

        const up = e.sim.calls.at(-1)!;
        expect(up.format).to.equal(format);
        if (format === 'anthropic') {
          expect(up.path).to.equal('/v1/messages');
          expect(up.headers['x-api-key']).to.equal(SIM_KEY);
          expect(up.headers['anthropic-version']).to.equal('2023-06-01');
          expect(up.body).to.deep.include({ model: 'sim/echo', system: [{ type: 'text', text: 'You are terse.' }], messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }], stream: false });
          expect(up.body.max_tokens).to.be.a('number');
        } else {
          expect(up.path).to.equal('/v1beta/models/sim/echo:generateContent');
          expect(up.headers['x-goog-api-key']).to.equal(SIM_KEY);
          expect(up.body).to.deep.equal({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }], systemInstruction: { parts: [{ text: 'You are terse.' }] } });
        }
      });

      it('streamed: text deltas, the usage chunk, [DONE]; billed from the upstream usage', async () => {
        const stream = await client().chat.completions.create({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'one two three' }] });
        const chunks: any[] = [];
        for await (const c of stream) chunks.push(c);
        expect(chunks[0].choices[0].delta.role).to.equal('assistant');
        expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).to.equal('Echo: one two three');
        expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason).to.equal('stop');
        // "one two three" ceil(13/4) = 4; 4 words
        expect(chunks.at(-1).usage).to.include({ prompt_tokens: 4, completion_tokens: 4 });
        expect(await lastRow()).to.include({ status: 'success', prompt_tokens: 4, completion_tokens: 4, cost_nano: 12_000 });
        expect(e.sim.calls.at(-1)!.path).to.equal(format === 'anthropic' ? '/v1/messages' : '/v1beta/models/sim/echo:streamGenerateContent');
      });

      it('images as data: URLs go as inline image data', async () => {
        const { data } = await ask(model, [{ type: 'text', text: 'what is it?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }]);
        expect(data.choices[0].message.content).to.equal('Echo: what is it?');
        const body = e.sim.calls.at(-1)!.body;
        if (format === 'anthropic') {
          expect(body.messages[0].content).to.deep.equal([{ type: 'text', text: 'what is it?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }]);
        } else {
          expect(body.contents[0].parts).to.deep.equal([{ text: 'what is it?' }, { inlineData: { mimeType: 'image/png', data: PNG } }]);
        }
      });
    });
  }

  for (const model of ['claude/tool', 'gem/tool']) {
    it(`tool calls through ${model}: plain, streamed with the SDK helper, and the round trip`, async () => {
      const r = await client().chat.completions.create({ model, messages: [{ role: 'user', content: 'weather?' }], tools });
      expect(r.choices[0].finish_reason).to.equal('tool_calls');
      const call = r.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
      expect(call.function.name).to.equal('get_weather');
      expect(JSON.parse(call.function.arguments)).to.deep.equal({ query: 'weather in Paris' });
      expect(call.id).to.be.a('string').and.not.equal('');

      const streamed = await client().chat.completions.stream({ model, messages: [{ role: 'user', content: 'weather?' }], tools }).finalChatCompletion();
      const sc = streamed.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
      expect(sc.function.name).to.equal('get_weather');
      expect(JSON.parse(sc.function.arguments)).to.deep.equal({ query: 'weather in Paris' });
      expect(streamed.choices[0].finish_reason).to.equal('tool_calls');

      const answer = await client().chat.completions.create({ model, tools, messages: [
        { role: 'user', content: 'weather?' }, r.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' }] });
      expect(answer.choices[0].message.content).to.equal('Tool said: sunny, 21C');
    });
  }

  it('Anthropic cache reads: prompt_tokens include them (Anthropic input_tokens do not), priced at the cache rate', async () => {
    const r = await client().chat.completions.create({ model: 'claude/cached', messages: [{ role: 'user', content: 'a'.repeat(40) }] });
    expect(r.usage).to.include({ prompt_tokens: 10, completion_tokens: 2 });
    expect(r.usage!.prompt_tokens_details!.cached_tokens).to.equal(5);
    // 5 * $1/M + 5 * $0.25/M + 2 * $2/M
    expect((r as any).gateway_usage.cost_usd).to.be.closeTo(10.25e-6, 1e-12);
  });

  it('a stream fails over before its first byte: Anthropic 500, then Gemini serves it', async () => {
    const { data: stream, response } = await client().chat.completions.create({ model: 'mix/failover', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    let text = '';
    let last: any;
    for await (const c of stream) { text += c.choices[0]?.delta?.content ?? ''; last = c; }
    expect(text).to.equal('Echo: hi');
    expect(response.headers.get('x-gateway-provider')).to.equal('google');
    expect(last.gateway_usage).to.include({ gateway: 'google', attempts: 2 });
    expect(e.sim.calls.map((c) => [c.format, c.model])).to.deep.equal([['anthropic', 'sim/error-500'], ['gemini', 'sim/echo']]);
    await e.gateway.services.recorder.flush();
    expect(await e.gateway.store.health.get('anthropic', 'mix/failover')).to.include({ last_status: 'error' });
    expect(await lastRow()).to.include({ status: 'success', gateway: 'google', model: 'mix/failover' });
  });

  it('`provider` pins one gateway (no router): served there only; a gateway that does not serve the model is a 404', async () => {
    for (const [provider, format] of [['google', 'gemini'], ['anthropic', 'anthropic']] as const) {
      e.sim.reset();
      const { data, response } = await ask('mix/pinned', 'pin', { provider });
      expect(data.choices[0].message.content).to.equal('Echo: pin');
      expect(response.headers.get('x-gateway-provider')).to.equal(provider);
      expect(e.sim.calls.map((c) => c.format)).to.deep.equal([format]);
      expect(e.sim.calls[0].body).to.not.have.property('provider');
    }
    const notServed = await ask('mix/pinned', 'x', { provider: 'groq' }).catch((x) => x);
    expect(notServed.status).to.equal(404);
    expect(notServed.message).to.contain("is not served by 'groq'");
    const unknown = await ask('mix/pinned', 'x', { provider: 'nowhere' }).catch((x) => x);
    expect(unknown.status).to.equal(404);
    expect(unknown.message).to.contain("Unknown provider 'nowhere'");
  });

  it('the breaker opens after repeated failures: the only candidate then answers 503 circuit_open without an upstream call', async () => {
    // 1st request: two tries (the last candidate may retry once), both fail -> 502
    const first = await ask('mix/dead').catch((x) => x);
    expect(first.status).to.equal(502);
    expect(e.sim.calls).to.have.length(2);
    // 2nd: the third failure opens the breaker, so the retry is not made
    const second = await ask('mix/dead').catch((x) => x);
    expect(second.status).to.equal(502);
    expect(e.sim.calls).to.have.length(3);
    expect(e.gateway.services.breakers.state('anthropic', 'mix/dead')).to.equal('open');
    // 3rd: nothing is called
    const third = await ask('mix/dead').catch((x) => x);
    expect(third.status).to.equal(503);
    expect(third.code).to.equal('circuit_open');
    expect(e.sim.calls).to.have.length(3);
    expect(await lastRow()).to.include({ status: 'error', http_status: 503, error_class: 'circuit_open', cost_nano: 0 });
  });

  it('the breaker opens on a failing candidate: later requests skip it and go straight to the next', async () => {
    for (let i = 0; i < 3; i++) {
      const { data } = await ask('mix/skip', `try ${i}`);
      expect((data as any).gateway_usage).to.include({ gateway: 'google', attempts: 2 });
    }
    e.sim.reset();
    const { data } = await ask('mix/skip', 'after');
    expect(data.choices[0].message.content).to.equal('Echo: after');
    expect((data as any).gateway_usage).to.include({ gateway: 'google', attempts: 1 });
    expect(e.sim.calls.map((c) => c.format)).to.deep.equal(['gemini']);
  });

  describe('with a short first-byte timeout', () => {
    let t: E2E;
    let tkey: string;
    before(async () => {
      t = await startE2E({
        sim: e.sim,
        gateways: { anthropic: 'anthropic', google: 'gemini' },
        env: { UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '300' },
        offers: [
          // slow-60000ms: only the timeout can end these within the test's time limit
          offer('anthropic', 'sim/slow-60000ms', 'mix/slow-failover'),
          offer('google', 'models/sim/echo', 'mix/slow-failover'),
          offer('google', 'models/sim/slow-60000ms', 'mix/slow-only'),
        ],
      });
      ({ key: tkey } = await t.gateway.newKey(1));
    });
    after(async () => t?.close());
    const tclient = () => new OpenAI({ apiKey: tkey, baseURL: `${t.origin}/v1`, maxRetries: 0, timeout: 20_000 });

    it('a candidate silent past the first-byte timeout is failed over, plain and streamed', async () => {
      const r = await tclient().chat.completions.create({ model: 'mix/slow-failover', messages: [{ role: 'user', content: 'hi' }] });
      expect(r.choices[0].message.content).to.equal('Echo: hi');
      expect((r as any).gateway_usage).to.include({ gateway: 'google', attempts: 2 });
      const s = await tclient().chat.completions.create({ model: 'mix/slow-failover', stream: true, messages: [{ role: 'user', content: 'hi' }] });
      let text = '';
      for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
      expect(text).to.equal('Echo: hi');
    });

    it('when every candidate is silent: 504 upstream_timeout, plain and streamed', async () => {
      const err = await tclient().chat.completions.create({ model: 'mix/slow-only', messages: [{ role: 'user', content: 'hi' }] }).catch((x) => x);
      expect(err.status).to.equal(504);
      expect(err.code).to.equal('upstream_timeout');
      const serr = await tclient().chat.completions.create({ model: 'mix/slow-only', stream: true, messages: [{ role: 'user', content: 'hi' }] }).catch((x) => x);
      expect(serr.status).to.equal(504);
    });
  });
});
