/**
 * The official `@anthropic-ai/sdk` against POST /v1/messages, the gateway against the upstream simulator.
 * `test/*` models are served by an OpenAI-compatible upstream (the request is translated), `claude/*` by an
 * Anthropic upstream (the client's body goes natively), `gem/*` by a Gemini upstream (translated).
 * Prices are the fixture catalog's ($1/M prompt, $2/M completion, $0.25/M cached); token counts the
 * simulator's (prompt = ceil(chars/4) per message text, completion = words; Anthropic input_tokens exclude
 * cache reads and output_tokens include thinking words), so every number below is worked out by hand.
 */
import { expect } from 'chai';
import Anthropic, { type APIError } from '@anthropic-ai/sdk';
import { offer } from '../support/catalog.js';
import { startE2E, usageRows, SIM_KEY, type E2E, postMessages } from '../support/e2e.js';
import { readEvents, jsonData } from '../support/sim-client.js';
import { specSchemaErrors } from '../support/spec-schema.js';

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather',
  input_schema: { type: 'object' as const, properties: { query: { type: 'string' } }, required: ['query'] },
};

describe('e2e: /v1/messages with the Anthropic SDK', function () {
  this.timeout(30_000);
  let e: E2E;
  let key: string;
  let userId: number;

  before(async () => {
    e = await startE2E({
      gateways: { openai: 'openai', anthropic: 'anthropic', google: 'gemini' },
      offers: [
        offer('openai', 'sim/echo', 'test/echo'),
        offer('openai', 'sim/chunks-5', 'test/chunks'),
        offer('openai', 'sim/tool-call', 'test/tool'),
        offer('openai', 'sim/length', 'test/length'),
        offer('openai', 'sim/cached', 'test/cached'),
        offer('openai', 'sim/stream-break', 'test/break'),
        offer('anthropic', 'sim/echo', 'claude/echo'),
        offer('anthropic', 'sim/tool-call', 'claude/tool'),
        offer('anthropic', 'sim/stop-seq', 'claude/stop'),
        offer('anthropic', 'sim/length', 'claude/length'),
        offer('anthropic', 'sim/cached', 'claude/cached'),
        offer('anthropic', 'sim/stream-break', 'claude/break'),
        offer('google', 'models/sim/echo', 'gem/echo'),
      ],
    });
    ({ key, userId } = await e.gateway.newKey(1));
  });
  after(async () => e?.close());
  beforeEach(() => e.sim.reset());

  const client = (apiKey = key) => new Anthropic({ apiKey, baseURL: e.origin, maxRetries: 0 });
  const balance = () => e.gateway.store.credits.balance(userId);
  const lastRow = async () => (await usageRows(e.gateway, userId)).at(-1)!;
  const post = (body: unknown, headers: Record<string, string>, origin = e.origin) => postMessages(origin, body, headers);

  describe('served by an OpenAI-compatible upstream (translated)', () => {
    it('messages.create: a proper message, exact usage, gateway_usage, credits settled, one usage record', async () => {
      const before = await balance();
      const { data, response } = await client().messages.create({
        model: 'test/echo', max_tokens: 50, system: 'You are terse.', messages: [{ role: 'user', content: 'hello' }],
      }).withResponse();
      expect(data).to.include({ type: 'message', role: 'assistant', model: 'test/echo', stop_reason: 'end_turn', stop_sequence: null });
      expect(data.id).to.match(/^msg_/);
      expect(data.content).to.deep.equal([{ type: 'text', text: 'Echo: hello' }]);
      // prompt: system ceil(14/4) = 4 + "hello" ceil(5/4) = 2; output: 2 words
      expect(data.usage).to.include({ input_tokens: 6, output_tokens: 2 });
      // 6 * $1/M + 2 * $2/M
      expect((data as any).gateway_usage).to.include({ gateway: 'openai', model: 'sim/echo', attempts: 1 });
      expect((data as any).gateway_usage.cost_usd).to.be.closeTo(10e-6, 1e-12);
      expect(response.headers.get('x-gateway-provider')).to.equal('openai');
      expect(await balance()).to.equal(before - 10_000);
      expect(await lastRow()).to.include({ endpoint: 'messages', status: 'success', gateway: 'openai', model: 'test/echo', prompt_tokens: 6, completion_tokens: 2 });
      expect(Number((await lastRow()).cost_nano)).to.equal(10_000);

      const up = e.sim.calls.at(-1)!;
      expect(up.format).to.equal('openai');
      expect(up.headers.authorization).to.equal(`Bearer ${SIM_KEY}`);
      expect(up.body.messages).to.deep.equal([{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'hello' }]);
      expect(up.body.max_completion_tokens).to.equal(50);
    });

    it('messages.create streamed: Anthropic events in order, text deltas, final usage; charged like the plain call', async () => {
      const before = await balance();
      const stream = await client().messages.create({ model: 'test/chunks', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'count' }] });
      const events: any[] = [];
      for await (const ev of stream) events.push(ev);
      const types = events.map((x) => x.type);
      expect(types[0]).to.equal('message_start');
      expect(types.slice(-2)).to.deep.equal(['message_delta', 'message_stop']);
      expect(types.filter((t) => t === 'content_block_start')).to.have.length(1);
      expect(types.indexOf('content_block_stop')).to.equal(types.lastIndexOf('content_block_delta') + 1);
      const text = events.filter((x) => x.type === 'content_block_delta').map((x) => x.delta.text).join('');
      expect(text).to.equal('w1 w2 w3 w4 w5 ');
      const delta = events.at(-2);
      expect(delta.delta).to.deep.equal({ stop_reason: 'end_turn', stop_sequence: null });
      // "count" = 2 prompt tokens, 5 words
      expect(delta.usage).to.include({ input_tokens: 2, output_tokens: 5 });
      expect(await balance()).to.equal(before - 12_000);
      expect(await lastRow()).to.include({ endpoint: 'messages', status: 'success', prompt_tokens: 2, completion_tokens: 5 });
      expect(e.sim.calls.at(-1)!.body.stream_options).to.deep.equal({ include_usage: true });
    });

    it('the SDK messages.stream() helper and its finalMessage()', async () => {
      const runner = client().messages.stream({ model: 'test/echo', max_tokens: 50, messages: [{ role: 'user', content: 'stream me' }] });
      const deltas: string[] = [];
      runner.on('text', (d) => deltas.push(d));
      const final = await runner.finalMessage();
      expect(final.content[0]).to.include({ type: 'text', text: 'Echo: stream me' });
      expect(deltas.join('')).to.equal('Echo: stream me');
      expect(final.stop_reason).to.equal('end_turn');
      // "stream me" ceil(9/4) = 3; "Echo: stream me" 3 words
      expect(final.usage).to.include({ input_tokens: 3, output_tokens: 3 });
    });

    it('tool use round trip: tool_use (plain and streamed) -> tool_result -> answer', async () => {
      const first = await client().messages.create({ model: 'test/tool', max_tokens: 100, tools: [weatherTool], messages: [{ role: 'user', content: 'weather?' }] });
      expect(first.stop_reason).to.equal('tool_use');
      expect(first.content).to.have.length(1);
      const use = first.content[0] as Anthropic.ToolUseBlock;
      expect(use).to.deep.include({ type: 'tool_use', name: 'get_weather', input: { query: 'weather in Paris' } });
      expect(e.sim.calls.at(-1)!.body.tools).to.deep.equal([{ type: 'function', function: { name: 'get_weather', description: 'Current weather', parameters: weatherTool.input_schema } }]);

      const streamed = await client().messages.stream({ model: 'test/tool', max_tokens: 100, tools: [weatherTool], tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'weather?' }] }).finalMessage();
      expect(streamed.stop_reason).to.equal('tool_use');
      expect(streamed.content[0]).to.deep.include({ type: 'tool_use', name: 'get_weather', input: { query: 'weather in Paris' } });
      expect(e.sim.calls.at(-1)!.body.tool_choice).to.equal('required');

      const answer = await client().messages.create({ model: 'test/tool', max_tokens: 100, tools: [weatherTool], messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 21C' }] },
      ] });
      expect(answer.content).to.deep.equal([{ type: 'text', text: 'Tool said: sunny, 21C' }]);
      expect(answer.stop_reason).to.equal('end_turn');
      const sent = e.sim.calls.at(-1)!.body.messages;
      expect(sent.slice(1)).to.deep.equal([
        { role: 'assistant', content: null, tool_calls: [{ id: use.id, type: 'function', function: { name: 'get_weather', arguments: '{"query":"weather in Paris"}' } }] },
        { role: 'tool', content: 'sunny, 21C', tool_call_id: use.id },
      ]);
    });

    it('max_tokens reached: stop_reason max_tokens, plain and streamed', async () => {
      const r = await client().messages.create({ model: 'test/length', max_tokens: 1, messages: [{ role: 'user', content: 'a b c' }] });
      expect(r.content).to.deep.equal([{ type: 'text', text: 'Echo:' }]);
      expect(r).to.include({ stop_reason: 'max_tokens', stop_sequence: null });
      const s = await client().messages.stream({ model: 'test/length', max_tokens: 2, messages: [{ role: 'user', content: 'a b c' }] }).finalMessage();
      expect(s.content[0]).to.include({ text: 'Echo: a' });
      expect(s.stop_reason).to.equal('max_tokens');
    });

    it('cached prompt tokens: input_tokens excludes them, cache_read_input_tokens names them, priced at the cache rate', async () => {
      const before = await balance();
      const r = await client().messages.create({ model: 'test/cached', max_tokens: 50, messages: [{ role: 'user', content: 'a'.repeat(40) }] });
      // 10 prompt tokens, 5 of them cached; output "Echo: aaaa…" = 2 words
      expect(r.usage).to.include({ input_tokens: 5, cache_read_input_tokens: 5, output_tokens: 2 });
      // 5 * $1/M + 5 * $0.25/M + 2 * $2/M = 10.25 µ$
      expect(await balance()).to.equal(before - 10_250);
    });

    it('an upstream break mid-stream becomes an error event the SDK raises; the record says so; nothing charged', async () => {
      const before = await balance();
      const stream = await client().messages.create({ model: 'test/break', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'x' }] });
      let text = '';
      const err = await (async () => {
        try { for await (const ev of stream) if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text; } catch (x) { return x as APIError; }
      })();
      expect(err, 'the SDK must raise').to.be.instanceOf(Anthropic.APIError);
      expect(err!.type).to.equal('api_error');
      expect(err!.message).to.contain('upstream stream failed');
      expect(text).to.equal('w1 w2 w3 ');
      expect(await lastRow()).to.include({ endpoint: 'messages', status: 'error', error_class: 'stream_broken', http_status: 502, cost_nano: 0 });
      expect(await balance()).to.equal(before);
      expect(await e.gateway.store.credits.openHoldCount(userId)).to.equal(0);
    });
  });

  describe('served by an Anthropic upstream (native pass-through)', () => {
    it('the client body reaches Anthropic untouched (top_k, cache_control, metadata, thinking) with the gateway key', async () => {
      const body = {
        model: 'claude/echo', max_tokens: 2000, top_k: 5, temperature: 0.5, metadata: { user_id: 'u-1' },
        system: [{ type: 'text' as const, text: 'Be brief.', cache_control: { type: 'ephemeral' as const } }],
        thinking: { type: 'enabled' as const, budget_tokens: 1024 },
        tools: [{ ...weatherTool, cache_control: { type: 'ephemeral' as const } }],
        messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi', cache_control: { type: 'ephemeral' as const, ttl: '1h' as const } }] }],
      };
      const r = await client().messages.create(body);
      const up = e.sim.calls.at(-1)!;
      expect(up.format).to.equal('anthropic');
      expect(up.headers['x-api-key']).to.equal(SIM_KEY);
      expect(up.headers['anthropic-version']).to.equal('2023-06-01');
      expect(up.headers.authorization).to.equal(undefined);
      expect(up.body).to.deep.equal({ ...body, model: 'sim/echo', stream: false });

      // thinking first, then the answer; output_tokens count the 3 thinking words too
      expect(r.content).to.deep.equal([
        { type: 'thinking', thinking: 'Thinking about: hi', signature: 'sim-signature' },
        { type: 'text', text: 'Echo: hi' },
      ]);
      expect(r.id).to.equal(`msg_sim_${e.sim.calls.length}`);
      expect(r.model).to.equal('claude/echo');
      // system "Be brief." ceil(9/4) = 3 + "hi" 1 = 4 input; 2 + 3 output
      expect(r.usage).to.include({ input_tokens: 4, output_tokens: 5 });
      expect((r as any).gateway_usage).to.include({ gateway: 'anthropic', model: 'sim/echo' });
      expect((r as any).gateway_usage.cost_usd).to.be.closeTo(4e-6 + 10e-6, 1e-12);
      expect(await lastRow()).to.include({ gateway: 'anthropic', prompt_tokens: 4, completion_tokens: 5, cost_nano: 14_000 });
    });

    it('streams: the upstream events are forwarded as they came (raw fetch with x-api-key)', async () => {
      const body = { model: 'claude/echo', max_tokens: 2000, stream: true, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'hi there' }] };
      const res = await post(body, { 'x-api-key': key });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.contain('text/event-stream');
      expect(res.headers.get('x-gateway-provider')).to.equal('anthropic');
      expect(res.headers.get('x-request-id')).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      const got = await readEvents(res);
      // the same request straight to the simulator: the gateway's events must be these, only the model renamed
      const direct = await readEvents(await post({ ...body, model: 'sim/echo' }, { 'x-api-key': SIM_KEY }, e.sim.url));
      const names = (x: typeof got) => x.events.map((ev) => ev.event);
      expect(names(got)).to.deep.equal(names(direct));
      expect(names(got)).to.include.members(['ping', 'content_block_start', 'content_block_delta', 'content_block_stop']);
      const gotData = jsonData(got.events);
      const directData = jsonData(direct.events);
      expect(gotData[0].message).to.include({ id: 'msg_sim_1', model: 'claude/echo' });
      expect(gotData[0].message.usage).to.include({ service_tier: 'standard' });
      gotData[0].message.model = 'sim/echo';
      gotData[0].message.id = directData[0].message.id;
      expect(gotData).to.deep.equal(directData);
      const deltas = gotData.filter((d) => d.type === 'content_block_delta').map((d) => d.delta);
      expect(deltas.filter((d) => d.type === 'thinking_delta').map((d) => d.thinking).join('')).to.equal('Thinking about: hi there');
      expect(deltas.find((d) => d.type === 'signature_delta')).to.deep.equal({ type: 'signature_delta', signature: 'sim-signature' });
      // "hi there" ceil(8/4) = 2 input; "Echo: hi there" 3 + thinking 4 words = 7 output
      expect(await lastRow()).to.include({ gateway: 'anthropic', status: 'success', prompt_tokens: 2, completion_tokens: 7, cost_nano: 16_000 });
    });

    it('tool use round trip, natively', async () => {
      const first = await client().messages.create({ model: 'claude/tool', max_tokens: 100, tools: [weatherTool], messages: [{ role: 'user', content: 'weather?' }] });
      expect(first.stop_reason).to.equal('tool_use');
      const use = first.content[0] as Anthropic.ToolUseBlock;
      expect(use).to.deep.include({ type: 'tool_use', id: 'toolu_sim_1', name: 'get_weather', input: { query: 'weather in Paris' } });
      const streamed = await client().messages.stream({ model: 'claude/tool', max_tokens: 100, tools: [weatherTool], messages: [{ role: 'user', content: 'weather?' }] }).finalMessage();
      expect(streamed.content[0]).to.deep.include({ type: 'tool_use', name: 'get_weather', input: { query: 'weather in Paris' } });
      const messages: Anthropic.MessageParam[] = [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'sunny, 21C' }] }] },
      ];
      const answer = await client().messages.create({ model: 'claude/tool', max_tokens: 100, tools: [weatherTool], messages });
      expect(answer.content).to.deep.equal([{ type: 'text', text: 'Tool said: sunny, 21C' }]);
      expect(e.sim.calls.at(-1)!.body.messages).to.deep.equal(messages);
    });

    it('a stop sequence: stop_reason stop_sequence with the sequence named, plain and streamed', async () => {
      const r = await client().messages.create({ model: 'claude/stop', max_tokens: 50, stop_sequences: ['world', 'STOP'], messages: [{ role: 'user', content: 'go' }] });
      expect(r.content).to.deep.equal([{ type: 'text', text: 'Hello ' }]);
      expect(r).to.include({ stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
      const s = await client().messages.stream({ model: 'claude/stop', max_tokens: 50, stop_sequences: ['STOP'], messages: [{ role: 'user', content: 'go' }] }).finalMessage();
      expect(s).to.include({ stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
    });

    it('max_tokens reached, natively', async () => {
      const r = await client().messages.create({ model: 'claude/length', max_tokens: 2, messages: [{ role: 'user', content: 'a b c' }] });
      expect(r.content).to.deep.equal([{ type: 'text', text: 'Echo: a' }]);
      expect(r.stop_reason).to.equal('max_tokens');
    });

    it('cache reads: input_tokens as Anthropic reports them (cache excluded), billed prompt includes them', async () => {
      const before = await balance();
      const r = await client().messages.create({ model: 'claude/cached', max_tokens: 50, messages: [{ role: 'user', content: 'a'.repeat(40) }] });
      expect(r.usage).to.include({ input_tokens: 5, cache_read_input_tokens: 5, output_tokens: 2 });
      expect(await balance()).to.equal(before - 10_250);
      expect(await lastRow()).to.include({ prompt_tokens: 10, cached_tokens: 5, completion_tokens: 2 });
    });

    it('an Anthropic stream that breaks mid-way ends in an error event the SDK raises; nothing charged', async () => {
      const before = await balance();
      const runner = client().messages.stream({ model: 'claude/break', max_tokens: 50, messages: [{ role: 'user', content: 'x' }] });
      const err = await runner.finalMessage().then(() => undefined, (x) => x);
      expect(err).to.be.instanceOf(Anthropic.APIError);
      expect(err.message).to.contain('upstream stream failed');
      expect(await lastRow()).to.include({ gateway: 'anthropic', status: 'error', error_class: 'stream_broken', cost_nano: 0 });
      expect(await balance()).to.equal(before);
    });
  });

  it('thinking blocks from a non-Anthropic upstream (Gemini thoughts), plain and streamed', async () => {
    const params = { model: 'gem/echo', max_tokens: 2000, thinking: { type: 'enabled' as const, budget_tokens: 1024 }, messages: [{ role: 'user' as const, content: 'hi' }] };
    const r = await client().messages.create(params);
    expect(r.content.map((b) => b.type)).to.deep.equal(['thinking', 'text']);
    expect(r.content[0]).to.include({ thinking: 'Thinking about: hi' });
    expect(r.content[1]).to.include({ text: 'Echo: hi' });
    // Gemini: 1 prompt token, 2 answer + 3 thought tokens, all output
    expect(r.usage).to.include({ input_tokens: 1, output_tokens: 5 });
    expect(e.sim.calls.at(-1)!.body.generationConfig.thinkingConfig).to.deep.equal({ thinkingBudget: 1024, includeThoughts: true });
    const s = await client().messages.stream(params).finalMessage();
    expect(s.content.map((b) => b.type)).to.deep.equal(['thinking', 'text']);
    expect(s.content[0]).to.include({ thinking: 'Thinking about: hi' });
    expect(s.content[1]).to.include({ text: 'Echo: hi' });
    expect(s.usage).to.include({ output_tokens: 5 });
  });

  it('every streamed event is `event: <type>` and matches AnthropicStreamEvent (translated, Gemini, native, error)', async () => {
    const streams = [
      { model: 'test/tool', tools: [weatherTool], messages: [{ role: 'user', content: 'weather?' }] },
      { model: 'gem/echo', thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'hi' }] },
      { model: 'claude/tool', tools: [weatherTool], messages: [{ role: 'user', content: 'weather?' }] },
      { model: 'test/break', messages: [{ role: 'user', content: 'x' }] },
    ];
    const seen = new Set<string>();
    for (const body of streams) {
      const res = await post({ ...body, max_tokens: 2000, stream: true }, { 'x-api-key': key });
      const { events } = await readEvents(res);
      for (const ev of events) {
        const data = JSON.parse(ev.data);
        expect(data.type, ev.data).to.equal(ev.event);
        expect(specSchemaErrors('AnthropicStreamEvent', data), ev.data).to.deep.equal([]);
        seen.add(data.type === 'content_block_delta' ? data.delta.type : data.type);
      }
    }
    expect([...seen].sort()).to.deep.equal(['content_block_start', 'content_block_stop', 'error', 'input_json_delta', 'message_delta',
      'message_start', 'message_stop', 'ping', 'text_delta', 'thinking_delta'].sort());
  });

  it('images (base64 and url) reach an OpenAI-compatible upstream as image_url parts', async () => {
    const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
    const r = await client().messages.create({ model: 'test/echo', max_tokens: 50, messages: [{ role: 'user', content: [
      { type: 'text', text: 'what is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ] }] });
    expect(r.content).to.deep.equal([{ type: 'text', text: 'Echo: what is this?' }]);
    expect(e.sim.calls.at(-1)!.body.messages[0].content).to.deep.equal([
      { type: 'text', text: 'what is this?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
    ]);
  });

  it("the SDK's beta namespace (?beta=true): served the same way; its anthropic-beta header reaches a native upstream", async () => {
    const r = await client().beta.messages.create({ model: 'claude/echo', max_tokens: 50, betas: ['context-1m-2025-08-07'], messages: [{ role: 'user', content: 'beta' }] });
    expect(r.content).to.deep.equal([{ type: 'text', text: 'Echo: beta' }]);
    const up = e.sim.calls.at(-1)!;
    expect(up.headers['anthropic-beta']).to.equal('context-1m-2025-08-07');
    expect(up.body).to.not.have.property('betas');
    await client().messages.create({ model: 'claude/echo', max_tokens: 50, messages: [{ role: 'user', content: 'no beta' }] });
    expect(e.sim.calls.at(-1)!.headers).to.not.have.property('anthropic-beta');
  });

  it('system text blocks and several text blocks in a turn reach a translated upstream as separate lines', async () => {
    await client().messages.create({ model: 'test/echo', max_tokens: 50,
      system: [{ type: 'text', text: 'You are terse.' }, { type: 'text', text: 'Answer in English.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: '<reminder>be nice</reminder>' }, { type: 'text', text: 'hello' }] }] });
    expect(e.sim.calls.at(-1)!.body.messages).to.deep.equal([
      { role: 'system', content: 'You are terse.\nAnswer in English.' },
      { role: 'user', content: '<reminder>be nice</reminder>\nhello' },
    ]);
  });

});
