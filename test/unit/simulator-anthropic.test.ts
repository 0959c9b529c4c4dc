/** The upstream simulator speaking the Anthropic Messages format: bodies, the exact event sequence, errors. */
import { expect } from 'chai';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { ANTHROPIC_HEADERS, jsonData, postJson, readEvents, readEventsUntilBreak, readTimedEvents } from '../support/sim-client.js';

// Hand-counted: system "Be brief." 9 chars -> 3 tokens, "hello there" 11 chars -> 3 tokens.
const BASE = { max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'hello there' }] };
const SEARCH = { name: 'search', description: 'web search', input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } };

describe('simulator: Anthropic format', () => {
  let sim: Simulator;
  before(async () => { sim = await startSimulator(); });
  after(async () => { await sim.close(); });
  beforeEach(() => sim.reset());
  const messages = (body: object, headers: Record<string, string> = ANTHROPIC_HEADERS) => postJson(`${sim.url}/v1/messages`, { ...BASE, ...body }, headers);
  const events = async (body: object) => (await readEvents(await messages({ ...body, stream: true }))).events;

  it('answers a message object with a text block, stop_reason and usage', async () => {
    const res = await messages({ model: 'sim/echo' });
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({
      id: 'msg_sim_1', type: 'message', role: 'assistant', model: 'sim/echo',
      content: [{ type: 'text', text: 'Echo: hello there' }],
      stop_reason: 'end_turn', stop_sequence: null,
      usage: { input_tokens: 6, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 3, service_tier: 'standard' },
    });
    expect(sim.calls[0]).to.deep.include({ format: 'anthropic', path: '/v1/messages', model: 'sim/echo' });
    expect(sim.calls[0].headers['anthropic-version']).to.equal('2023-06-01');
  });

  it('streams the real event sequence, each with its event: line', async () => {
    const { events: evs, raw } = await readEvents(await messages({ model: 'sim/echo', stream: true }));
    expect(evs.map((e) => e.event)).to.deep.equal([
      'message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_delta',
      'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(raw.split('\n\n').filter(Boolean).every((b) => /^event: \w+\ndata: [^\n]+$/.test(b))).to.equal(true);
    const data = jsonData(evs);
    expect(data.map((d) => d.type)).to.deep.equal(evs.map((e) => e.event));
    expect(data[0].message).to.deep.include({ id: 'msg_sim_1', content: [], stop_reason: null, stop_sequence: null });
    expect(data[0].message.usage).to.deep.include({ input_tokens: 6, output_tokens: 1 });
    expect(data[1]).to.deep.equal({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(data.slice(3, 6).map((d) => d.delta)).to.deep.equal([
      { type: 'text_delta', text: 'Echo: ' }, { type: 'text_delta', text: 'hello ' }, { type: 'text_delta', text: 'there' },
    ]);
    expect(data[6]).to.deep.equal({ type: 'content_block_stop', index: 0 });
    expect(data[7]).to.deep.equal({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } });
  });

  it('demands x-api-key and anthropic-version, and checks the key when started with one', async () => {
    const noKey = await messages({ model: 'sim/echo' }, { 'anthropic-version': '2023-06-01' });
    expect(noKey.status).to.equal(401);
    expect(await noKey.json()).to.deep.include({ type: 'error', error: { type: 'authentication_error', message: 'x-api-key header is required' } });
    const noVersion = await messages({ model: 'sim/echo' }, { 'x-api-key': 'k' });
    expect(noVersion.status).to.equal(400);
    expect((await noVersion.json()).error.type).to.equal('invalid_request_error');
    const keyed = await startSimulator({ apiKey: 'sk-ant-right' });
    try {
      const url = `${keyed.url}/v1/messages`;
      expect((await postJson(url, { ...BASE, model: 'sim/echo' }, { ...ANTHROPIC_HEADERS, 'x-api-key': 'sk-ant-wrong' })).status).to.equal(401);
      expect((await postJson(url, { ...BASE, model: 'sim/echo' }, { ...ANTHROPIC_HEADERS, 'x-api-key': 'sk-ant-right' })).status).to.equal(200);
    } finally {
      await keyed.close();
    }
  });

  it('rejects a request without max_tokens as invalid_request_error', async () => {
    const res = await postJson(`${sim.url}/v1/messages`, { model: 'sim/echo', messages: BASE.messages }, ANTHROPIC_HEADERS);
    expect(res.status).to.equal(400);
    expect((await res.json()).error).to.deep.equal({ type: 'invalid_request_error', message: 'max_tokens: Field required' });
  });

  it('errors come in Anthropic shape; 429 carries Retry-After: 1', async () => {
    const res = await messages({ model: 'sim/error-429', stream: true });
    expect(res.status).to.equal(429);
    expect(res.headers.get('retry-after')).to.equal('1');
    expect((await res.json()).error).to.deep.equal({ type: 'rate_limit_error', message: 'simulated upstream error 429' });
    expect((await (await messages({ model: 'sim/error-529' })).json()).error.type).to.equal('overloaded_error');
    expect((await (await messages({ model: 'sim/flaky-1' })).json()).error.type).to.equal('api_error');
    expect((await messages({ model: 'sim/flaky-1' })).status).to.equal(200);
  });

  it('lists models in Anthropic shape when asked with anthropic-version', async () => {
    const res = await fetch(`${sim.url}/v1/models`, { headers: ANTHROPIC_HEADERS });
    const body = await res.json();
    expect(body).to.include({ has_more: false, first_id: 'sim/echo', last_id: body.data[body.data.length - 1].id });
    expect(body.data[0]).to.deep.equal({ type: 'model', id: 'sim/echo', display_name: 'Simulator echo', created_at: '2025-01-01T00:00:00Z' });
  });

  it('sim/tool-call answers a tool_use block, streamed as input_json_delta', async () => {
    const body = await (await messages({ model: 'sim/tool-call', tools: [SEARCH] })).json();
    expect(body.content).to.deep.equal([{ type: 'tool_use', id: 'toolu_sim_1', name: 'search', input: { query: 'weather in Paris' } }]);
    expect(body.stop_reason).to.equal('tool_use');
    const data = jsonData(await events({ model: 'sim/tool-call', tools: [SEARCH] }));
    expect(data[1].content_block).to.deep.equal({ type: 'tool_use', id: 'toolu_sim_2', name: 'search', input: {} });
    const json = data.filter((d) => d.delta?.type === 'input_json_delta').map((d) => d.delta.partial_json).join('');
    expect(JSON.parse(json)).to.deep.equal({ query: 'weather in Paris' });
    expect(data.find((d) => d.type === 'message_delta').delta.stop_reason).to.equal('tool_use');
  });

  it('sim/tool-call answers a tool_result with "Tool said: <result>"', async () => {
    const msgs = [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'search', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: '18C' }] }] },
    ];
    const body = await (await messages({ model: 'sim/tool-call', tools: [SEARCH], messages: msgs })).json();
    expect(body.content).to.deep.equal([{ type: 'text', text: 'Tool said: 18C' }]);
    expect(body.stop_reason).to.equal('end_turn');
    expect(body.usage.input_tokens).to.equal(3 + 2 + 0 + 1); // system, "weather?", tool_use (no text), "18C"
  });

  it('adds a thinking block when thinking is enabled, counted in output_tokens', async () => {
    const body = await (await messages({ model: 'sim/echo', thinking: { type: 'enabled', budget_tokens: 1024 } })).json();
    expect(body.content).to.deep.equal([
      { type: 'thinking', thinking: 'Thinking about: hello there', signature: 'sim-signature' },
      { type: 'text', text: 'Echo: hello there' },
    ]);
    expect(body.usage.output_tokens).to.equal(3 + 4);
    const data = jsonData(await events({ model: 'sim/echo', thinking: { type: 'enabled', budget_tokens: 1024 } }));
    const thinking = data.filter((d) => d.delta?.type === 'thinking_delta').map((d) => d.delta.thinking).join('');
    expect(thinking).to.equal('Thinking about: hello there');
    expect(data.find((d) => d.delta?.type === 'signature_delta').delta.signature).to.equal('sim-signature');
    expect(data.filter((d) => d.type === 'content_block_start').map((d) => [d.index, d.content_block.type])).to.deep.equal([[0, 'thinking'], [1, 'text']]);
  });

  it('sim/stop-seq stops at the stop sequence with stop_reason stop_sequence', async () => {
    const body = await (await messages({ model: 'sim/stop-seq', stop_sequences: ['STOP'] })).json();
    expect(body).to.deep.include({ content: [{ type: 'text', text: 'Hello ' }], stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
    const delta = jsonData(await events({ model: 'sim/stop-seq', stop_sequences: ['STOP'] })).find((d) => d.type === 'message_delta');
    expect(delta.delta).to.deep.equal({ stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
  });

  it('sim/length cuts at max_tokens with stop_reason max_tokens', async () => {
    const body = await (await messages({ model: 'sim/length', max_tokens: 1 })).json();
    expect(body).to.deep.include({ content: [{ type: 'text', text: 'Echo:' }], stop_reason: 'max_tokens' });
  });

  it('sim/cached reports cache reads apart from input_tokens', async () => {
    const body = await (await messages({ model: 'sim/cached', system: 'x'.repeat(40) })).json();
    // prompt 10 + 3 = 13, cached floor(13 / 2) = 6
    expect(body.usage).to.deep.include({ input_tokens: 7, cache_read_input_tokens: 6 });
  });

  it('sim/json, sim/chunks-N and sim/keepalive', async () => {
    const json = await (await messages({ model: 'sim/json' })).json();
    expect(JSON.parse(json.content[0].text)).to.deep.equal({ ok: true, echo: 'hello there' });
    const chunks = jsonData(await events({ model: 'sim/chunks-3' })).filter((d) => d.delta?.type === 'text_delta').map((d) => d.delta.text);
    expect(chunks).to.deep.equal(['w1 ', 'w2 ', 'w3 ']);
    const { events: evs, raw } = await readEvents(await messages({ model: 'sim/keepalive', stream: true }));
    expect(raw).to.include('\n\n: PROCESSING\n\nevent: ping\n');
    expect(evs.map((e) => e.event)).to.include.members(['message_start', 'message_stop']);
  });

  it('sim/chunks-N-every-Mms: the opening events at once, each text delta M ms after the event before it', async () => {
    const t0 = performance.now();
    const events = await readTimedEvents(await messages({ model: 'sim/chunks-4-every-40ms', stream: true }), t0);
    expect(events.map((e) => e.event)).to.deep.equal(['message_start', 'content_block_start', 'ping', ...Array(4).fill('content_block_delta'),
      'content_block_stop', 'message_delta', 'message_stop']);
    const texts = events.filter((e) => e.event === 'content_block_delta');
    expect(texts.map((e) => JSON.parse(e.data).delta.text)).to.deep.equal(['w1 ', 'w2 ', 'w3 ', 'w4 ']);
    // ping and the first text are 40 ms apart, as are the texts; the opening events and the closing ones come together
    const gaps = [texts[0].at - events[2].at, ...texts.slice(1).map((e, i) => e.at - texts[i].at)];
    for (const gap of gaps) expect(gap).to.be.within(30, 120);
    expect(events[2].at - events[0].at).to.be.below(30);
    expect(events.at(-1)!.at - texts[3].at).to.be.below(30);
  });

  it('sim/stream-break dies after 3 text deltas without message_stop', async () => {
    const { events: evs, error } = await readEventsUntilBreak(await messages({ model: 'sim/stream-break', stream: true }));
    expect(error).to.be.instanceOf(Error);
    expect(evs.map((e) => e.event)).to.deep.equal(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_delta']);
  });

  it('sim/malformed sends invalid JSON', async () => {
    const res = await messages({ model: 'sim/malformed' });
    expect(res.status).to.equal(200);
    const text = await res.text();
    expect(() => JSON.parse(text)).to.throw(SyntaxError);
    const evs = await events({ model: 'sim/malformed' });
    expect(() => jsonData(evs)).to.throw(SyntaxError);
    expect(evs[evs.length - 1].event).to.equal('message_stop');
  });
});
