/**
 * The shipped typed client (`model-gateway/client`, imported by package name as a user would) against a running
 * gateway over real HTTP, the gateway against the upstream simulator. Prices are the fixture catalog's ($1/M
 * prompt, $2/M completion) and token counts the simulator's (ceil(chars/4) prompt, words completion), so the
 * cost is worked out by hand: "Hello there" is 3 prompt tokens, "Echo: Hello there" 3 completion tokens,
 * 3 × $1/M + 3 × $2/M = $0.000009 = 9,000 nano-USD.
 */
import { expect } from 'chai';
import { createGatewayClient, unwrap, GatewayError, type GatewayClient, type Schemas } from 'model-gateway/client';
import { startE2E, type E2E } from '../support/e2e.js';
import { offer } from '../support/catalog.js';
import { runTs } from '../support/proc.js';

describe('e2e: the typed client (model-gateway/client)', function () {
  this.timeout(60_000);
  let e2e: E2E;
  let gw: GatewayClient;
  let key: string;
  let userId: number;

  before(async () => {
    e2e = await startE2E({ gateways: { openai: 'openai' }, offers: [offer('openai', 'sim/echo', 'test/echo')] });
    ({ key, userId } = await e2e.gateway.newKey(1));
    gw = createGatewayClient({ baseUrl: `${e2e.origin}/`, apiKey: key });
  });
  after(async () => {
    await e2e?.close();
  });

  it('reads public operations: /health and the gateway list', async () => {
    const health: Schemas['LivenessResponse'] = unwrap(await gw.GET('/health'));
    expect(health).to.include({ status: 'ok', version: '2.0.3', database: 'ok' });
    const list = unwrap(await gw.GET('/v1/gateways'));
    expect(list.count).to.equal(list.gateways.length);
    expect(list.gateways.map((g) => g.id)).to.include.members(['openai', 'anthropic', 'google']);
  });

  it('creates a session, completes a chat into it, reads and renames it, and the key pays the exact cost', async () => {
    const created = await gw.POST('/v1/chat/sessions', { body: { title: 'Typed' } });
    expect(created.response.status).to.equal(201);
    const sessionId = unwrap(created).data.id;

    const completion = unwrap(await gw.POST('/v1/chat/completions', {
      params: { query: { session_id: sessionId } },
      body: { model: 'test/echo', messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 20 },
    }));
    expect(completion.object).to.equal('chat.completion');
    expect(completion.choices[0].message.content).to.equal('Echo: Hello there');
    expect(completion.usage).to.include({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
    expect(completion.gateway_usage).to.include({ gateway: 'openai', cost_usd: 0.000009, attempts: 1 });
    expect(await e2e.gateway.store.credits.balance(userId)).to.equal(1_000_000_000 - 9_000);

    const session = unwrap(await gw.GET('/v1/chat/sessions/{session_id}', { params: { path: { session_id: sessionId } } })).data;
    expect(session.model).to.equal('test/echo');
    expect((session.messages ?? []).map((m) => [m.role, m.content])).to.deep.equal([['user', 'Hello there'], ['assistant', 'Echo: Hello there']]);

    const renamed = unwrap(await gw.PUT('/v1/chat/sessions/{session_id}', { params: { path: { session_id: sessionId } }, body: { title: 'Renamed' } }));
    expect(renamed).to.include({ success: true });
    expect(renamed.data.title).to.equal('Renamed');
    const page = unwrap(await gw.GET('/v1/chat/sessions', { params: { query: { limit: 5 } } }));
    expect(page.total).to.equal(1);
    expect(page.data.map((s) => s.title)).to.deep.equal(['Renamed']);
  });

  it('turns error answers into GatewayError with the status and the spec body', async () => {
    const anonymous = createGatewayClient({ baseUrl: e2e.origin });
    const denied = await anonymous.GET('/v1/chat/sessions');
    expect(denied.response.status).to.equal(401);
    expect(() => unwrap(denied)).to.throw(GatewayError, /gateway answered 401/);

    const invalid = await gw.POST('/v1/chat/sessions', { body: { title: '' } });
    try {
      unwrap(invalid);
      expect.fail('unwrap must throw on a 422');
    } catch (err) {
      expect(err).to.be.instanceOf(GatewayError);
      const e = err as GatewayError;
      expect(e.status).to.equal(422);
      expect((e.body as Schemas['HTTPValidationError']).detail[0].loc).to.deep.equal(['body', 'title']);
      expect(e.message).to.match(/^gateway answered 422: body\.title: /);
      expect(e.requestId).to.be.a('string').and.not.equal('');
    }
  });

  it('examples/client.ts runs against the gateway and prints what it got', async () => {
    const own = await e2e.gateway.newKey(1);
    const r = await runTs('examples/client.ts', [], { GATEWAY_URL: e2e.origin, GATEWAY_KEY: own.key, GATEWAY_MODEL: 'openai/sim/echo' });
    expect(r.stderr).to.equal('');
    expect(r.code).to.equal(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).to.equal('health: ok, interface 2.0.3');
    expect(lines).to.include('reply: Echo: Hello from the typed client');
    expect(lines.find((l) => l.startsWith('served by: '))).to.match(/^served by: openai, cost \d/);
    expect(lines.find((l) => l.startsWith('session '))).to.match(/^session \d+ "Typed client example": user, assistant$/);
    expect(lines.at(-1)).to.match(/^rejected: 422 gateway answered 422: body\.messages/);
  });
});
