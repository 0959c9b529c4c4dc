/**
 * The official `openai` package against the gateway, the gateway against the upstream simulator over real HTTP.
 * Prices are the fixture catalog's ($1/M prompt, $2/M completion, $0.25/M cached) and token counts the
 * simulator's (prompt = ceil(chars/4) per message text, completion = words), so every cost is worked out by hand.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { fixtureCatalog, gw, offer } from '../support/catalog.js';
import { validateChatCompletionRequest } from '../support/openai-schema.js';
import { usageRows as recordedUsage } from '../support/e2e.js';
import { spendElsewhere } from '../support/db.js';
import { largeBodiesInFlight, registeredPlainStrings, splicedBodies } from '../../src/json-body.js';

const NANO = 1e9;

describe('e2e: /v1/chat/completions with the OpenAI SDK', function () {
  this.timeout(30_000);
  let sim: Simulator;
  let gateway: TestGateway;
  let server: http.Server;
  let baseURL: string;
  let key: string;
  let userId: number;

  before(async () => {
    sim = await startSimulator({ apiKey: 'sim-key' });
    const url = `${sim.url}/v1`;
    const catalog = fixtureCatalog({
      gateways: [{ ...gw('openai'), url }, { ...gw('groq'), url }, { ...gw('together'), url }, { ...gw('fireworks') /* no key: not configured */ }],
      offers: [
        offer('openai', 'sim/echo', 'test/echo'),
        offer('openai', 'sim/tool-call', 'test/tool'),
        offer('openai', 'sim/json', 'test/json'),
        offer('openai', 'sim/chunks-20', 'test/chunks'),
        offer('openai', 'sim/keepalive', 'test/keepalive'),
        offer('openai', 'sim/usage-with-choices', 'test/usage-with-choices'),
        offer('openai', 'sim/cached', 'test/cached'),
        offer('openai', 'sim/stream-break', 'test/break'),
        offer('openai', 'sim/slow-2000ms', 'test/slow'),
        // failover: the first candidate fails, the second serves
        offer('groq', 'sim/error-500', 'test/failover'),
        offer('openai', 'sim/echo', 'test/failover'),
        offer('groq', 'sim/error-429', 'test/limited'),
        offer('fireworks', 'sim/echo', 'test/unconfigured'),
      ],
    });
    gateway = await startTestGateway({ services: { models: catalog } });
    server = gateway.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    ({ key, userId } = await gateway.newKey(1));
  });
  after(async () => {
    server?.close();
    await gateway?.close();
    await sim?.close();
  });
  beforeEach(() => sim.reset());

  const client = (apiKey = key) => new OpenAI({ apiKey, baseURL, maxRetries: 0 });
  const usageRows = () => recordedUsage(gateway, userId);

  it('plain completion: content, usage, gateway_usage with the exact cost, provider headers, credits settled', async () => {
    const before = await gateway.store.credits.balance(userId);
    const { data, response } = await client().chat.completions.create({ model: 'test/echo', messages: [{ role: 'user', content: 'hello' }] }).withResponse();
    expect(data.object).to.equal('chat.completion');
    expect(data.model).to.equal('test/echo');
    expect(data.choices[0].message).to.include({ role: 'assistant', content: 'Echo: hello' });
    expect(data.choices[0].finish_reason).to.equal('stop');
    // prompt: ceil(5/4) = 2 tokens; completion: "Echo: hello" = 2 words
    expect(data.usage).to.include({ prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 });
    const gu = (data as any).gateway_usage;
    expect(gu).to.include({ gateway: 'openai', provider: 'test', model: 'sim/echo', attempts: 1 });
    expect(gu.cost_usd).to.be.closeTo(6e-6, 1e-12);
    expect(response.headers.get('x-gateway-provider')).to.equal('openai');
    expect(response.headers.get('x-gateway-model')).to.equal('sim/echo');
    expect(await gateway.store.credits.balance(userId)).to.equal(before - 6000);
    // the request the upstream got is a valid OpenAI request, with the gateway's provider key
    const call = sim.calls.at(-1)!;
    expect(call.headers.authorization).to.equal('Bearer sim-key');
    expect(validateChatCompletionRequest(call.body).errors).to.deep.equal([]);
  });

  it('streamed completion: role first, text deltas, usage chunk only when asked, [DONE]; upstream always asked for usage', async () => {
    const { data: stream, response } = await client().chat.completions.create({ model: 'test/chunks', messages: [{ role: 'user', content: 'count' }], stream: true, stream_options: { include_usage: true } },
      { headers: { 'X-Request-Id': 'stream-req-1' } }).withResponse();
    expect(response.headers.get('content-type')).to.equal('text/event-stream; charset=utf-8');
    expect(response.headers.get('x-request-id')).to.equal('stream-req-1');
    expect(response.headers.get('connection')).to.equal('keep-alive');
    expect(response.headers.get('x-content-type-options')).to.equal('nosniff'); // the prelude's, queued for the head
    expect(response.headers.get('cache-control')).to.equal('no-cache, no-transform');
    expect(response.headers.get('x-gateway-provider')).to.equal('openai');
    const chunks: any[] = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0].choices[0].delta.role).to.equal('assistant');
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(text).to.equal(Array.from({ length: 20 }, (_, i) => `w${i + 1} `).join(''));
    const last = chunks.at(-1);
    expect(last.choices).to.deep.equal([]);
    expect(last.usage).to.include({ prompt_tokens: 2, completion_tokens: 20 });
    expect(last.gateway_usage.cost_usd).to.be.closeTo(2e-6 + 40e-6, 1e-12);

    const quiet = await client().chat.completions.create({ model: 'test/chunks', messages: [{ role: 'user', content: 'count' }], stream: true });
    const qchunks: any[] = [];
    for await (const c of quiet) qchunks.push(c);
    expect(qchunks.every((c) => c.usage == null && c.choices.length === 1)).to.equal(true);
    expect(sim.calls.at(-1)!.body.stream_options).to.deep.equal({ include_usage: true });
    const rows = await usageRows();
    expect(rows.at(-1)).to.include({ status: 'success', prompt_tokens: 2, completion_tokens: 20 });
    expect(Number(rows.at(-1)!.cost_nano)).to.equal(42_000);
  });

  it('the SDK stream helper and its final message', async () => {
    const runner = client().chat.completions.stream({ model: 'test/echo', messages: [{ role: 'user', content: 'stream me' }] });
    const deltas: string[] = [];
    runner.on('content', (d) => deltas.push(d));
    const final = await runner.finalChatCompletion();
    expect(final.choices[0].message.content).to.equal('Echo: stream me');
    expect(deltas.join('')).to.equal('Echo: stream me');
  });

  it('tool calls, plain and streamed, and the round trip with the tool result', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } } }];
    const r = await client().chat.completions.create({ model: 'test/tool', messages: [{ role: 'user', content: 'weather?' }], tools });
    expect(r.choices[0].finish_reason).to.equal('tool_calls');
    const call = r.choices[0].message.tool_calls![0] as any;
    expect(call.function.name).to.equal('get_weather');
    expect(JSON.parse(call.function.arguments)).to.deep.equal({ query: 'weather in Paris' });

    const runner = client().chat.completions.stream({ model: 'test/tool', messages: [{ role: 'user', content: 'weather?' }], tools });
    const streamed = await runner.finalChatCompletion();
    const sc = streamed.choices[0].message.tool_calls![0] as any;
    expect(sc.function.name).to.equal('get_weather');
    expect(JSON.parse(sc.function.arguments)).to.deep.equal({ query: 'weather in Paris' });

    const answer = await client().chat.completions.create({ model: 'test/tool', tools, messages: [
      { role: 'user', content: 'weather?' }, r.choices[0].message as any, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' }] });
    expect(answer.choices[0].message.content).to.equal('Tool said: sunny, 21C');
  });

  it('a 100 KB conversation in many scripts reaches the upstream intact, and the answer comes back intact', async () => {
    const scripts = ['café ☕ 😀 👨‍👩‍👧', '记录的总数已经改变了吗？', 'русский, Ελληνικά, עברית, العربية', 'code: "q" \\ \n\t'];
    const messages: Array<{ role: 'user' | 'assistant'; content: string }> = [];
    for (let i = 0; JSON.stringify(messages).length < 100 * 1024; i++) messages.push({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${scripts[i % 4]} `.repeat(20) });
    messages.push({ role: 'user', content: '最后的问题 ☕: ¿qué tal?' });
    const r = await client().chat.completions.create({ model: 'test/echo', messages });
    expect(r.choices[0].message.content).to.equal('Echo: 最后的问题 ☕: ¿qué tal?');
    expect(sim.calls).to.have.length(1);
    expect(sim.calls[0].body.messages).to.deep.equal(messages);
    expect(Number(sim.calls[0].headers['content-length'])).to.equal(Buffer.byteLength(JSON.stringify(sim.calls[0].body)));
  });

  /** Sends `messages` (holding one large image) and checks the answer, that its upstream body was written with the image straight in, and intact. */
  async function sendImage(messages: OpenAI.Chat.ChatCompletionMessageParam[], echo: string) {
    const spliced = splicedBodies.count;
    const r = await client().chat.completions.create({ model: 'test/echo', messages });
    expect(r.choices[0].message.content).to.equal(`Echo: ${echo}`);
    expect(splicedBodies.count).to.equal(spliced + 1);
    const call = sim.calls.at(-1)!;
    expect(call.body.messages).to.deep.equal(messages);
    expect(call.body.model).to.equal('sim/echo');
    expect(Number(call.headers['content-length'])).to.equal(Buffer.byteLength(JSON.stringify(call.body)));
    expect(registeredPlainStrings()).to.equal(0);
    expect(largeBodiesInFlight()).to.equal(0);
  }

  it('a 300 KB image reaches the upstream intact, its bytes written straight into the upstream body, and is released after', async () => {
    const url = `data:image/png;base64,${Buffer.alloc(225_000, 9).toString('base64')}`;
    await sendImage([{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url } }] }], 'What is in this picture?');
  });

  it('an image beside a prompt with new lines and accents (the body proves nothing) is still written straight in, intact', async () => {
    const url = `data:image/jpeg;base64,${Buffer.alloc(150_000, 5).toString('base64')}`;
    await sendImage([{ role: 'system', content: 'Describe images.\nBe brief: « café » ☕' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url, detail: 'low' } }, { type: 'text', text: 'What is\tthis?' }] }], 'What is\tthis?');
  });

  it('JSON mode', async () => {
    const r = await client().chat.completions.create({ model: 'test/json', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' } });
    expect(JSON.parse(r.choices[0].message.content!)).to.deep.equal({ ok: true, echo: 'x' });
    expect(sim.calls.at(-1)!.body.response_format).to.deep.equal({ type: 'json_object' });
  });

  it('fails over from a failing upstream to a healthy one, and records both', async () => {
    const { data } = await client().chat.completions.create({ model: 'test/failover', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(data.choices[0].message.content).to.equal('Echo: hi');
    expect((data as any).gateway_usage).to.include({ gateway: 'openai', attempts: 2 });
    await gateway.services.recorder.flush();
    const groq = await gateway.store.health.get('groq', 'test/failover');
    expect(groq).to.include({ last_status: 'error' });
    expect(Number(groq!.errors)).to.be.at.least(1);
    expect((await gateway.store.health.get('openai', 'test/failover'))?.last_status).to.equal('success');
  });

  it('a rate-limited only upstream answers 429 with Retry-After, and costs nothing', async () => {
    const before = await gateway.store.credits.balance(userId);
    const res = await fetch(`${baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/limited', messages: [{ role: 'user', content: 'x' }] }) });
    expect(res.status).to.equal(429);
    expect(res.headers.get('retry-after')).to.equal('1');
    expect((await res.json()).error.type).to.equal('rate_limit_error');
    expect(await gateway.store.credits.balance(userId)).to.equal(before);
    expect(await gateway.store.credits.openHoldCount(userId)).to.equal(0);
  });

  it('unknown model → 404; known but unconfigured → 503; both clear, both free', async () => {
    const e404 = await client().chat.completions.create({ model: 'nobody/has-this', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(e404).to.be.instanceOf(OpenAI.NotFoundError);
    expect(e404.message).to.contain("The model 'nobody/has-this' does not exist");
    const e503 = await client().chat.completions.create({ model: 'test/unconfigured', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(e503.status).to.equal(503);
    expect(e503.message).to.contain('no configured gateway serves it');
  });

  it('402 on a balance that cannot cover the worst case; nothing held or spent', async () => {
    const poor = await gateway.newKey(0.000001, 'poor');
    const err = await client(poor.key).chat.completions.create({ model: 'test/echo', messages: [{ role: 'user', content: 'hello' }] }).catch((e) => e);
    expect(err.status).to.equal(402);
    expect(err.message).to.contain('Insufficient credits');
    expect(await gateway.store.credits.balance(poor.userId)).to.equal(1000);
    expect(sim.calls).to.have.length(0);
  });

  it('a hold committed alongside the upstream call and refused: the call is cut short, 402, nothing held, spent or recorded', async () => {
    for (const stream of [false, true]) {
      const k = await gateway.newKey(1, `early-${stream}`);
      // A served request: the gateway has seen this key's balance (~$1), far over the worst case of the next one.
      await client(k.key).chat.completions.create({ model: 'test/echo', messages: [{ role: 'user', content: 'hello' }] });
      expect(gateway.store.credits.likelyCovers(k.userId, 1_000_000)).to.equal(true);
      // Spent where this gateway does not see it (another instance): 1,000 nano-USD left.
      await spendElsewhere(gateway.store, k.userId, (await gateway.store.credits.balance(k.userId)) - 1000);
      const rowsBefore = (await recordedUsage(gateway, k.userId)).length;
      sim.reset();
      // The database is kept busy for 300 ms (a transaction holds the connection), so the hold's commit waits
      // and the upstream call, started early, is seen to arrive before the refusal.
      const busy = (ms: number) => gateway.store.db.transaction().execute(() => new Promise((r) => setTimeout(r, ms)));
      const t0 = Date.now();
      const db = busy(300);
      const err = await client(k.key).chat.completions.create({ model: 'test/slow', stream, messages: [{ role: 'user', content: 'hello' }] }).catch((e) => e);
      await db;
      expect(err.status, `stream: ${stream}`).to.equal(402);
      expect(err.message).to.contain('Insufficient credits');
      // The upstream call had started (test/slow answers after 2 s) and was cut short when the hold was refused.
      expect(sim.calls).to.have.length(1);
      expect(Date.now() - t0).to.be.below(1500);
      expect(await gateway.store.credits.balance(k.userId)).to.equal(1000);
      expect(await gateway.store.credits.openHoldCount(k.userId)).to.equal(0);
      expect(await gateway.store.credits.ledgerSum(k.userId)).to.equal(1000);
      expect(await recordedUsage(gateway, k.userId)).to.have.length(rowsBefore);
      // After a refusal nothing is trusted: the next request's hold is committed before any upstream call.
      const db2 = busy(300);
      const again = await client(k.key).chat.completions.create({ model: 'test/slow', stream, messages: [{ role: 'user', content: 'hello' }] }).catch((e) => e);
      await db2;
      expect(again.status).to.equal(402);
      expect(sim.calls).to.have.length(1);
    }
  });

  it('an upstream that breaks mid-stream ends in an error the SDK raises; usage says so; nothing charged', async () => {
    const before = await gateway.store.credits.balance(userId);
    const stream = await client().chat.completions.create({ model: 'test/break', messages: [{ role: 'user', content: 'x' }], stream: true });
    let text = '';
    const err = await (async () => { try { for await (const c of stream) text += c.choices[0]?.delta?.content ?? ''; } catch (e) { return e as Error; } })();
    expect(err, 'the SDK must raise').to.be.instanceOf(Error);
    expect(err!.message).to.contain('upstream stream failed');
    expect(text.length).to.be.greaterThan(0);
    const rows = await usageRows();
    expect(rows.at(-1)).to.include({ status: 'error', error_class: 'stream_broken', model: 'test/break' });
    expect(await gateway.store.credits.balance(userId)).to.equal(before);
  });

  it('a stream to a client that asked to close the connection says Connection: close, and the connection closes after [DONE]', async () => {
    const { headers, body, closed } = await new Promise<{ headers: http.IncomingHttpHeaders; body: string; closed: Promise<void> }>((resolve, reject) => {
      const req = http.request(`${baseURL}/chat/completions`, { method: 'POST', agent: false,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' } }, (res) => {
        const closed = new Promise<void>((done) => res.socket.once('close', () => done()));
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => { body += c; }).on('end', () => resolve({ headers: res.headers, body, closed })).on('error', reject);
      });
      req.on('error', reject).end(JSON.stringify({ model: 'test/chunks', stream: true, messages: [{ role: 'user', content: 'x' }] }));
    });
    expect(headers['content-type']).to.equal('text/event-stream; charset=utf-8');
    expect(headers.connection).to.equal('close');
    expect(body.trimEnd().endsWith('data: [DONE]')).to.equal(true);
    await closed;
  });

  it('keep-alive comments from the upstream never reach the client as data', async () => {
    const res = await fetch(`${baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/keepalive', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    const raw = await res.text();
    expect(raw).to.not.contain('PROCESSING');
    const datas = raw.split('\n\n').filter(Boolean);
    expect(datas.every((f) => f.startsWith('data: '))).to.equal(true);
    expect(datas.at(-1)).to.equal('data: [DONE]');
  });

  it('usage riding on a chunk that still has choices is read, and cached tokens are priced at the cache rate', async () => {
    const s = await client().chat.completions.create({ model: 'test/usage-with-choices', messages: [{ role: 'user', content: 'abcdefgh' }], stream: true, stream_options: { include_usage: true } });
    let usage: any;
    for await (const c of s) if (c.usage) usage = c.usage;
    expect(usage).to.include({ prompt_tokens: 2 });
    const cached = await client().chat.completions.create({ model: 'test/cached', messages: [{ role: 'user', content: 'a'.repeat(40) }] });
    // 10 prompt tokens, 5 cached: 5 * 1e-6 + 5 * 0.25e-6 input
    expect(cached.usage!.prompt_tokens_details!.cached_tokens).to.equal(5);
    expect((cached as any).gateway_usage.input_cost_usd).to.be.closeTo(6.25e-6, 1e-12);
  });

  it('a client that disconnects mid-stream aborts the upstream; the record says cancelled; nothing charged', async () => {
    const before = await gateway.store.credits.balance(userId);
    const ac = new AbortController();
    const res = await fetch(`${baseURL}/chat/completions`, { method: 'POST', signal: ac.signal, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/chunks', stream: true, messages: [{ role: 'user', content: 'x' }], max_tokens: 10 }) });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    await new Promise((r) => setTimeout(r, 300));
    const rows = await usageRows();
    const row = rows.at(-1)!;
    expect(['cancelled', 'success']).to.include(row.status); // 20 small chunks may all be out before the abort lands
    if (row.status === 'cancelled') expect(await gateway.store.credits.balance(userId)).to.equal(before);
    expect(await gateway.store.credits.openHoldCount(userId)).to.equal(0);
  });

  it('a burst of 100 concurrent requests on one key: balance, ledger and usage records agree exactly', async () => {
    const k = await gateway.newKey(0.01, 'burst');
    const c = client(k.key);
    const results = await Promise.allSettled(Array.from({ length: 100 }, (_, i) =>
      c.chat.completions.create({ model: 'test/echo', max_tokens: 20, messages: [{ role: 'user', content: `request number ${i}` }] })));
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter((r) => r.status === 'rejected' && (r.reason as any).status === 402).length;
    expect(ok + refused).to.equal(100);
    await gateway.services.recorder.flush();
    const rows = await gateway.store.usage.forUser(k.userId);
    const spent = rows.reduce((s, r) => s + Number(r.cost_nano), 0);
    const balance = await gateway.store.credits.balance(k.userId);
    expect(rows.filter((r) => r.status === 'success')).to.have.length(ok);
    expect(balance).to.be.at.least(0);
    expect(0.01 * NANO - balance).to.equal(spent);
    expect(await gateway.store.credits.ledgerSum(k.userId)).to.equal(balance);
    expect(await gateway.store.credits.openHoldCount(k.userId)).to.equal(0);
  });

  it('session_id: history goes upstream first; the user message and the reply are saved with tokens', async () => {
    const s = (await gateway.store.sessions.create(userId, 'Chat', 'test/echo'));
    await gateway.store.sessions.addMessages(s.id, [{ role: 'user', content: 'earlier question', model: 'test/echo', tokens: 4 }, { role: 'assistant', content: 'earlier answer', model: 'test/echo', tokens: 2 }]);
    const r = await client().chat.completions.create({ model: 'test/echo', messages: [{ role: 'user', content: 'new question' }] }, { query: { session_id: s.id } });
    expect(r.choices[0].message.content).to.equal('Echo: new question');
    expect(sim.calls.at(-1)!.body.messages.map((m: any) => m.content)).to.deep.equal(['earlier question', 'earlier answer', 'new question']);
    const saved = await gateway.store.sessions.messages(s.id);
    expect(saved.slice(2).map((m) => [m.role, m.content, m.tokens])).to.deep.equal([['user', 'new question', r.usage!.prompt_tokens], ['assistant', 'Echo: new question', 3]]);
    const other = await gateway.newKey(1, 'other');
    const e = await client(other.key).chat.completions.create({ model: 'test/echo', messages: [{ role: 'user', content: 'x' }] }, { query: { session_id: s.id } }).catch((x) => x);
    expect(e.status).to.equal(404);
  });
});
