/**
 * POST /v1/messages with the official `@anthropic-ai/sdk`: routing, failover, credits and errors, the same as
 * for chat completions (the wire formats themselves are in messages.test.ts). `test/*` models are served by an
 * OpenAI-compatible upstream (translated), `claude/*` by an Anthropic one (native), all on the simulator.
 * Prices: $1/M prompt, $2/M completion; tokens: prompt = ceil(chars/4) per message text, completion = words.
 */
import { expect } from 'chai';
import Anthropic, { type APIError } from '@anthropic-ai/sdk';
import { offer } from '../support/catalog.js';
import { startE2E, usageRows, type E2E, postMessages } from '../support/e2e.js';
import { DIALECTS, postgresAvailable } from '../support/db.js';

describe('e2e: /v1/messages routing, failover, money and errors', function () {
  this.timeout(30_000);
  let e: E2E;
  let key: string;
  let userId: number;

  before(async () => {
    e = await startE2E({
      gateways: { openai: 'openai', groq: 'openai', anthropic: 'anthropic' },
      offers: [
        offer('openai', 'sim/echo', 'test/echo'),
        offer('groq', 'sim/error-429', 'test/limited'),
        offer('groq', 'sim/error-500', 'test/down'),
        offer('anthropic', 'sim/echo', 'claude/echo'),
        offer('anthropic', 'sim/chunks-50000', 'claude/long'),
        offer('anthropic', 'sim/error-400', 'claude/bad'),
        // failover across the native/translated line, both ways
        offer('anthropic', 'sim/error-500', 'mix/to-openai'),
        offer('openai', 'sim/echo', 'mix/to-openai'),
        offer('groq', 'sim/error-503', 'mix/to-anthropic'),
        offer('anthropic', 'sim/echo', 'mix/to-anthropic'),
      ],
    });
    ({ key, userId } = await e.gateway.newKey(1));
  });
  after(async () => e?.close());
  beforeEach(() => e.sim.reset());

  const client = (apiKey = key) => new Anthropic({ apiKey, baseURL: e.origin, maxRetries: 0 });
  const balance = () => e.gateway.store.credits.balance(userId);
  const lastRow = async () => (await usageRows(e.gateway, userId)).at(-1)!;
  const post = (body: unknown, headers: Record<string, string>) => postMessages(e.origin, body, headers);

  describe('routing, failover and credits', () => {
    it('fails over from a failing Anthropic upstream to a translated one, plain and streamed; health records both', async () => {
      const r = await client().messages.create({ model: 'mix/to-openai', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
      expect(r.content).to.deep.equal([{ type: 'text', text: 'Echo: hi' }]);
      expect((r as any).gateway_usage).to.include({ gateway: 'openai', attempts: 2 });
      const { data: stream, response } = await client().messages.create({ model: 'mix/to-openai', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      let text = '';
      for await (const ev of stream) if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
      expect(text).to.equal('Echo: hi');
      expect(response.headers.get('x-gateway-provider')).to.equal('openai');
      expect(e.sim.calls.map((c) => c.format)).to.deep.equal(['anthropic', 'openai', 'anthropic', 'openai']);
      await e.gateway.services.recorder.flush();
      expect(await e.gateway.store.health.get('anthropic', 'mix/to-openai')).to.include({ last_status: 'error' });
      expect(await e.gateway.store.health.get('openai', 'mix/to-openai')).to.include({ last_status: 'success' });
    });

    it('fails over from a translated upstream to a native Anthropic one, which gets the client body as sent', async () => {
      // top_k is not in the SDK's parameter types any more; a client may still send it
      const params = { model: 'mix/to-anthropic', max_tokens: 50, top_k: 3, messages: [{ role: 'user' as const, content: 'hi' }] };
      const r = await client().messages.create(params);
      expect(r.content).to.deep.equal([{ type: 'text', text: 'Echo: hi' }]);
      expect(r.id).to.equal('msg_sim_2');
      expect(e.sim.calls.at(-1)!.body).to.deep.equal({ model: 'sim/echo', max_tokens: 50, top_k: 3, messages: [{ role: 'user', content: 'hi' }], stream: false });
    });

    it('a client that leaves mid-stream: the record says cancelled, nothing is charged, nothing stays held', async () => {
      const before = await balance();
      const requestId = `leave-${Date.now()}`;
      const ac = new AbortController();
      const res = await fetch(`${e.origin}/v1/messages`, { method: 'POST', signal: ac.signal,
        headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-request-id': requestId },
        body: JSON.stringify({ model: 'claude/long', max_tokens: 100_000, stream: true, messages: [{ role: 'user', content: 'x' }] }) });
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      let rows: Awaited<ReturnType<typeof e.gateway.store.usage.byRequestId>> = [];
      for (let i = 0; i < 100 && !rows.length; i++) {
        await e.gateway.services.recorder.flush();
        rows = await e.gateway.store.usage.byRequestId(requestId);
        if (!rows.length) await new Promise((r) => setTimeout(r, 50));
      }
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ status: 'cancelled', http_status: 499, error_class: 'client_disconnected', cost_nano: 0 });
      expect(await balance()).to.equal(before);
      expect(await e.gateway.store.credits.openHoldCount(userId)).to.equal(0);
    });
  });

  describe('errors in the Anthropic shape', () => {
    it('unknown model -> 404 not_found_error; nothing held', async () => {
      const err = await client().messages.create({ model: 'nobody/has-this', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((x) => x);
      expect(err).to.be.instanceOf(Anthropic.NotFoundError);
      expect(err.error).to.deep.equal({ type: 'error', error: { type: 'not_found_error', message: "The model 'nobody/has-this' does not exist or is not served by any gateway." } });
      expect(e.sim.calls).to.have.length(0);
    });

    it('a balance that cannot cover max_tokens -> 402 billing_error; nothing held or spent', async () => {
      const poor = await e.gateway.newKey(0.000001, 'poor');
      const err = await client(poor.key).messages.create({ model: 'test/echo', max_tokens: 1000, messages: [{ role: 'user', content: 'x' }] }).catch((x) => x);
      expect(err.status).to.equal(402);
      expect(err.type).to.equal('billing_error');
      expect(err.error.error.message).to.contain('Insufficient credits');
      expect(await e.gateway.store.credits.balance(poor.userId)).to.equal(1000);
      expect(e.sim.calls).to.have.length(0);
    });

    it('a rate-limited upstream -> 429 rate_limit_error with Retry-After; free; recorded', async () => {
      const before = await balance();
      const err = await client().messages.create({ model: 'test/limited', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((x) => x);
      expect(err).to.be.instanceOf(Anthropic.RateLimitError);
      expect(err.type).to.equal('rate_limit_error');
      expect(err.headers.get('retry-after')).to.equal('1');
      expect(await balance()).to.equal(before);
      expect(await lastRow()).to.include({ endpoint: 'messages', status: 'rate_limited', http_status: 429, cost_nano: 0 });
    });

    it('a failing upstream -> 502 api_error, plain and streamed (before the first byte: a status, not an event)', async () => {
      const err = await client().messages.create({ model: 'test/down', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((x) => x);
      expect(err.status).to.equal(502);
      expect(err.error).to.deep.include({ type: 'error' });
      expect(err.type).to.equal('api_error');
      const serr = await client().messages.create({ model: 'test/down', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] }).catch((x) => x);
      expect(serr.status).to.equal(502);
      expect(serr.type).to.equal('api_error');
      expect(await lastRow()).to.include({ status: 'error', http_status: 502, error_class: 'server_error' });
    });

    it("an upstream's refusal of the request -> 400 invalid_request_error; not retried, not a health failure", async () => {
      const err = await client().messages.create({ model: 'claude/bad', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((x) => x);
      expect(err).to.be.instanceOf(Anthropic.BadRequestError);
      expect(err.type).to.equal('invalid_request_error');
      expect(err.error.error.message).to.contain('simulated upstream error 400');
      expect(e.sim.calls).to.have.length(1);
      await e.gateway.services.recorder.flush();
      expect(await e.gateway.store.health.get('anthropic', 'claude/bad')).to.equal(undefined);
    });

    it('missing max_tokens -> 422 with loc ["body","max_tokens"]', async () => {
      const res = await post({ model: 'test/echo', messages: [{ role: 'user', content: 'x' }] }, { 'x-api-key': key });
      expect(res.status).to.equal(422);
      const j = await res.json();
      expect(j.detail).to.deep.equal([{ loc: ['body', 'max_tokens'], msg: 'Field required', type: 'missing' }]);
    });

    it('a bad key -> 401 authentication_error, by the SDK (Bearer) and by x-api-key', async () => {
      const err = await client('gw_live_' + 'x'.repeat(43)).messages.create({ model: 'test/echo', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((x) => x);
      expect(err).to.be.instanceOf(Anthropic.AuthenticationError);
      expect(err.type).to.equal('authentication_error');
      const res = await post({ model: 'test/echo', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }, { 'x-api-key': 'wrong' });
      expect(res.status).to.equal(401);
      expect((await res.json()).error.type).to.equal('authentication_error');
    });

    describe('with a short first-byte timeout', () => {
      let t: E2E;
      let tkey: string;
      before(async () => {
        t = await startE2E({ sim: e.sim, gateways: { anthropic: 'anthropic' }, env: { UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '300' },
          offers: [offer('anthropic', 'sim/slow-60000ms', 'claude/silent')] });
        ({ key: tkey } = await t.gateway.newKey(1));
      });
      after(async () => t?.close());

      it('a silent upstream -> 504 timeout_error, plain and streamed', async () => {
        const c = new Anthropic({ apiKey: tkey, baseURL: t.origin, maxRetries: 0 });
        const err = await c.messages.create({ model: 'claude/silent', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((x) => x);
        expect(err.status).to.equal(504);
        expect(err.type).to.equal('timeout_error');
        const serr = await c.messages.create({ model: 'claude/silent', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] }).catch((x) => x);
        expect(serr.status).to.equal(504);
        expect(serr.type).to.equal('timeout_error');
      });
    });

    it('x-api-key alone authenticates a plain request', async () => {
      const res = await post({ model: 'test/echo', max_tokens: 10, messages: [{ role: 'user', content: 'via header' }] }, { 'x-api-key': key });
      expect(res.status).to.equal(200);
      expect((await res.json()).content).to.deep.equal([{ type: 'text', text: 'Echo: via header' }]);
    });
  });
});

// Holds and settlement are SQL: the burst runs on both stores.
for (const dialect of DIALECTS) {
  describe(`e2e: /v1/messages credits under a burst, on ${dialect}`, function () {
    this.timeout(30_000);
    let e: E2E;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      e = await startE2E({ dialect, gateways: { openai: 'openai', anthropic: 'anthropic' },
        offers: [offer('openai', 'sim/echo', 'test/echo'), offer('anthropic', 'sim/echo', 'claude/echo')] });
    });
    after(async () => e?.close());

    it('30 concurrent requests on one small balance (native and translated): never below zero; ledger, balance and records agree', async () => {
      const k = await e.gateway.newKey(0.002, 'burst');
      const c = new Anthropic({ apiKey: k.key, baseURL: e.origin, maxRetries: 0 });
      // each holds its worst case (prompt estimate + 100 output tokens, ~0.22 m$, so about 9 fit at once) and
      // costs 10 µ$ when served (6 prompt tokens, 2 output)
      const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) =>
        c.messages.create({ model: i % 2 ? 'claude/echo' : 'test/echo', max_tokens: 100, system: 'You are terse.', messages: [{ role: 'user', content: 'hello' }] })));
      const ok = results.filter((r) => r.status === 'fulfilled').length;
      const refused = results.filter((r) => r.status === 'rejected' && (r.reason as APIError).status === 402).length;
      expect(ok + refused).to.equal(30);
      expect(ok).to.be.greaterThan(0);
      await e.gateway.services.recorder.flush();
      const rows = await e.gateway.store.usage.forUser(k.userId);
      const served = rows.filter((r) => r.status === 'success');
      expect(served).to.have.length(ok);
      expect(served.every((r) => Number(r.cost_nano) === 10_000)).to.equal(true);
      const bal = await e.gateway.store.credits.balance(k.userId);
      expect(bal).to.be.at.least(0);
      expect(2_000_000 - bal).to.equal(ok * 10_000);
      expect(await e.gateway.store.credits.ledgerSum(k.userId)).to.equal(bal);
      expect(await e.gateway.store.credits.openHoldCount(k.userId)).to.equal(0);
    });
  });
}
