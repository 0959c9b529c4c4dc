/**
 * Security, walked over the spec: every bearer operation refuses a revoked key; every `x-admin-only` operation
 * refuses an API key (403); every operation that names a chat session refuses another owner's (404, as if it did
 * not exist, before any upstream call); no request — whatever URL it carries in any field — makes the gateway
 * call a host it was not configured with (SSRF); security headers, CORS and request ids on the answers.
 */
import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, ADMIN_KEY, type TestGateway } from '../support/app.js';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { startFakeUpstream, type FakeUpstream } from '../support/upstream.js';
import { fixtureCatalog, gw, offer } from '../support/catalog.js';
import { specOps } from '../support/spec.js';
import { SchemaTools } from '../support/schema-arb.js';
import { loadSpec } from '../../src/spec.js';
import { loadConfig, ConfigError } from '../../src/config.js';

const as = (key: string) => ({ Authorization: `Bearer ${key}` });

describe('contract: security', function () {
  this.timeout(60_000);
  let sim: Simulator;
  let canary: FakeUpstream;
  let g: TestGateway;
  let alice: { key: string; keyId: number; userId: number };
  let bob: { key: string; keyId: number; userId: number };
  let revoked: string;
  let sessionId: number;
  const seen: string[] = []; // every answer's headers and body, to look for keys afterwards

  before(async () => {
    sim = await startSimulator();
    canary = await startFakeUpstream((_req, res) => res.end('canary'));
    const catalog = fixtureCatalog({
      gateways: [{ ...gw('openai'), url: `${sim.url}/v1` }, { ...gw('anthropic', 'anthropic'), url: sim.url }, { ...gw('google', 'gemini'), url: sim.url }],
      offers: [offer('openai', 'sim/echo', 'test/echo'), offer('anthropic', 'sim/echo', 'test/claude'), offer('google', 'models/sim/echo', 'test/gemini')],
    });
    g = await startTestGateway({ services: { models: catalog }, env: { RATE_LIMIT_RPM: '0', RATE_LIMIT_CONCURRENT: '0' } });
    alice = await g.newKey(5, 'alice');
    bob = await g.newKey(5, 'bob');
    const r = await g.newKey(5, 'revoked');
    revoked = r.key;
    await g.keys.revoke(r.keyId);
    const created = await request(g.app).post('/v1/chat/sessions').set(as(alice.key)).send({ title: 'private', model: 'test/echo' });
    sessionId = created.body.data.id;
  });
  after(async () => {
    await g?.close();
    await sim?.close();
    await canary?.close();
  });

  const ops = specOps();
  const send = (o: (typeof ops)[number], url: string, headers: Record<string, string>, body?: unknown) => {
    const r = (request(g.app) as any)[o.method](url).set(headers);
    return (body !== undefined ? r.send(body) : r).then((res: request.Response) => {
      seen.push(JSON.stringify(res.headers) + res.text);
      return res;
    });
  };

  it('every bearer operation refuses a revoked key with 401', async () => {
    const bearer = ops.filter((o) => o.security === 'required');
    expect(bearer.length).to.be.greaterThan(15);
    for (const o of bearer) {
      const res = await send(o, o.url, as(revoked));
      expect(res.status, `${o.operationId}`).to.equal(401);
      expect(res.body.error.type).to.equal('authentication_error');
    }
  });

  it('every x-admin-only operation refuses an API key with 403 and serves the admin credential', async () => {
    const admin = ops.filter((o) => o.op['x-admin-only']);
    expect(admin.map((o) => o.operationId).sort()).to.deep.equal(['getKeyLimits', 'setKeyLimits']);
    for (const o of admin) {
      const url = o.url.replace('/keys/x/', `/keys/${alice.keyId}/`);
      const body = o.method === 'put' ? { requests_per_minute: 10 } : undefined;
      const denied = await send(o, url, as(alice.key), body);
      expect(denied.status, o.operationId).to.equal(403);
      expect(denied.body.error).to.include({ type: 'permission_error', code: 'forbidden' });
      const ok = await send(o, url, as(ADMIN_KEY), body);
      expect(ok.status, o.operationId).to.equal(200);
    }
    expect(await g.store.limits.get(alice.keyId)).to.deep.include({ requests_per_minute: 10 });
    await request(g.app).put(`/v1/admin/keys/${alice.keyId}/limits`).set(as(ADMIN_KEY)).send({}); // back to the defaults
  });

  it('every operation that names a chat session refuses another owner\'s: 404 like a missing one, no upstream call', async () => {
    const tools = new SchemaTools(loadSpec().doc, { model: ['test/echo'] });
    const named = ops.filter((o) => (o.op.parameters ?? []).some((p: any) => p.name === 'session_id') || o.path.includes('{session_id}'));
    expect(named.map((o) => o.operationId).sort()).to.deep.equal(['createChatCompletion', 'deleteChatSession', 'getChatSession', 'updateChatSession']);
    const calls = sim.calls.length;
    for (const o of named) {
      const url = o.path.includes('{session_id}') ? o.path.replace('{session_id}', String(sessionId)) : `${o.path}?session_id=${sessionId}`;
      const schema = o.op.requestBody?.content?.['application/json']?.schema;
      const body = schema ? tools.sample(schema, (p) => (p.at(-1) === 'content' ? 'hello' : 'x')) : undefined;
      const res = await send(o, url, as(bob.key), body);
      expect(res.status, o.operationId).to.equal(404);
      expect(res.body.error.message).to.equal(`Chat session ${sessionId} not found.`);
    }
    expect(sim.calls.length).to.equal(calls);
    const mine = await g.store.sessions.get(alice.userId, sessionId);
    expect(mine).to.include({ title: 'private', model: 'test/echo' });
    expect(mine!.messages ?? []).to.deep.equal([]);
  });

  it('no URL in any field, parameter or message makes the gateway call another host (SSRF)', async () => {
    const target = `${canary.url}/ssrf`;
    // served model, gateway and tool, so the requests get past routing with the URL in every other field
    const tools = new SchemaTools(loadSpec().doc, { model: ['test/echo'], provider: ['openai'], tool_name: ['web_search'] });
    const statuses: Record<string, number> = {};
    let sent = 0;
    for (const o of ops) {
      const schema = o.op.requestBody?.content?.['application/json']?.schema;
      const body = schema ? tools.sample(schema, () => target) : undefined;
      const query = (o.op.parameters ?? []).filter((p: any) => p.in === 'query' && (p.schema?.type === 'string' || p.schema?.type?.includes?.('string')))
        .map((p: any) => `${p.name}=${encodeURIComponent(target)}`).join('&');
      const path = o.path.replace(/\{[^}]+\}/g, encodeURIComponent(target));
      const res = await send(o, query ? `${path}?${query}` : path, as(o.op['x-admin-only'] ? ADMIN_KEY : alice.key), body);
      statuses[o.operationId] = res.status;
      sent++;
    }
    // image URLs in messages go to the upstream as URLs, in all three wire formats; the gateway fetches none
    for (const model of ['test/echo', 'test/claude', 'test/gemini']) {
      const res = await request(g.app).post('/v1/chat/completions').set(as(alice.key)).send({
        model, messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: `${target}.png` } }] }],
      });
      expect(res.status, model + JSON.stringify(res.body)).to.equal(200);
      expect(JSON.stringify(sim.calls.at(-1)!.body)).to.contain(`${target}.png`);
    }
    const messages = await request(g.app).post('/v1/messages').set(as(alice.key)).send({
      model: 'test/claude', max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: `${target}.jpg` } }, { type: 'text', text: 'hi' }] }],
    });
    expect(messages.status).to.equal(200);
    expect(sent).to.equal(ops.length);
    // the requests that carry URLs into upstream calls were served, not refused
    expect(statuses).to.include({ createChatCompletion: 200, createMessage: 200, searchAugment: 200, hubSearch: 200, checkPartnerModel: 200 });
    expect(canary.requests.map((r) => r.url)).to.deep.equal([]);
  });

  it('keys never appear in any answer after creation', () => {
    expect(seen.length).to.be.greaterThan(20);
    for (const text of seen) for (const key of [alice.key, bob.key, revoked, ADMIN_KEY]) expect(text.includes(key)).to.equal(false);
  });

  it('security headers on every kind of answer; no X-Powered-By', async () => {
    const answers = [
      await request(g.app).get('/v1/tools'),
      await request(g.app).get('/v1/chat/sessions'),
      await request(g.app).get('/v1/nowhere'),
      await request(g.app).get('/v1/hub/search'),
      await request(g.app).get('/v1/chat/sessions/%ff').set(as(alice.key)),
    ];
    // Express's routes (plain text, HTML) and a 304 to a matching If-None-Match: the head is written otherwise
    const tools = answers[0];
    answers.push(await request(g.app).get('/metrics'), await request(g.app).get('/status'),
      await request(g.app).get('/v1/tools').set('If-None-Match', String(tools.headers.etag)));
    expect(answers.map((r) => r.status)).to.deep.equal([200, 401, 404, 422, 400, 200, 200, 304]);
    expect(answers.map((r) => r.headers['x-request-id'])).to.satisfy((ids: unknown[]) => ids.every((id) => typeof id === 'string' && id.length > 0));
    for (const res of answers) {
      // the status page's route sets a CSP of its own after the prelude's: that one wins
      const csp = res.headers['content-type']?.startsWith('text/html') ? "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
        : "default-src 'none'; frame-ancestors 'none'";
      expect(res.headers).to.include({
        'x-content-type-options': 'nosniff', 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer', 'content-security-policy': csp,
      });
      expect(res.headers).to.not.have.property('x-powered-by');
    }
  });

  it('request ids: every error carries X-Request-Id, and the Error body repeats it (the client\'s own id is kept)', async () => {
    const errors = [
      await request(g.app).get('/v1/chat/sessions'),
      await request(g.app).get('/v1/nowhere'),
      await request(g.app).delete('/v1/tools'),
      await request(g.app).get('/v1/chat/sessions/%ff').set(as(alice.key)),
      await request(g.app).get(`/v1/admin/keys/${alice.keyId}/limits`).set(as(alice.key)),
      await request(g.app).post('/v1/chat/sessions').set(as(alice.key)).set('content-type', 'application/json; charset=bogus').send('{}'),
      await request(g.app).post('/v1/chat/sessions').set(as(alice.key)).set('X-Request-Id', 'client-id-7').send({ title: '' }),
    ];
    expect(errors.map((r) => r.status)).to.deep.equal([401, 404, 405, 400, 403, 415, 422]);
    expect(errors[3].body.error.code).to.equal('malformed_path');
    // a well-formed escape is no malformed path: `%39` is a 9, so this is session 999999, which does not exist
    const escaped = await request(g.app).get('/v1/chat/sessions/%3999999').set(as(alice.key));
    expect(escaped.status).to.equal(404);
    expect(escaped.body.error.code).to.not.equal('malformed_path');
    for (const res of errors) {
      expect(res.headers['x-request-id']).to.be.a('string').and.not.equal('');
      if (res.body.error) expect(res.body.error.request_id).to.equal(res.headers['x-request-id']);
    }
    expect(errors.at(-1)!.headers['x-request-id']).to.equal('client-id-7');
  });

  it('CORS is closed by default: no CORS headers for any origin, preflights answered without them', async () => {
    const simple = await request(g.app).get('/v1/tools').set('Origin', 'https://evil.example');
    expect(simple.headers).to.not.have.property('access-control-allow-origin');
    const pre = await request(g.app).options('/v1/chat/completions').set('Origin', 'https://evil.example')
      .set('Access-Control-Request-Method', 'POST').set('Access-Control-Request-Headers', 'authorization');
    expect(pre.status).to.equal(204);
    expect(pre.headers).to.not.have.property('access-control-allow-origin');
    expect(pre.headers).to.not.have.property('access-control-allow-credentials');
  });

  it('a stopping instance refuses new requests with 503 shutting_down and Connection: close', async () => {
    g.services.inflight.draining = true;
    try {
      const res = await request(g.app).get('/v1/tools');
      expect(res.status).to.equal(503);
      expect(res.body.error.code).to.equal('shutting_down');
      expect(res.headers['retry-after']).to.equal('1');
      expect(res.headers.connection).to.equal('close');
    } finally {
      g.services.inflight.draining = false;
    }
  });
});

describe('contract: CORS when origins are configured', () => {
  let g: TestGateway;
  after(async () => { await g?.close(); });

  it('listed origins only, with Vary: Origin; credentials only when enabled, never with *', async () => {
    g = await startTestGateway({ env: { CORS_ORIGINS: 'https://app.example.com, https://admin.example.com', CORS_ALLOW_CREDENTIALS: 'true' } });
    const ok = await request(g.app).get('/v1/tools').set('Origin', 'https://app.example.com');
    expect(ok.headers).to.include({ 'access-control-allow-origin': 'https://app.example.com', 'access-control-allow-credentials': 'true' });
    expect(ok.headers.vary).to.contain('Origin');
    expect(ok.headers['access-control-expose-headers']).to.contain('X-Request-Id').and.contain('X-RateLimit-Remaining');
    const pre = await request(g.app).options('/v1/chat/completions').set('Origin', 'https://admin.example.com').set('Access-Control-Request-Method', 'POST');
    expect(pre.status).to.equal(204);
    expect(pre.headers['access-control-allow-headers']).to.contain('Authorization');
    const other = await request(g.app).get('/v1/tools').set('Origin', 'https://evil.example');
    expect(other.headers).to.not.have.property('access-control-allow-origin');
    await g.close();

    g = await startTestGateway({ env: { CORS_ORIGINS: '*' } });
    const any = await request(g.app).get('/v1/tools').set('Origin', 'https://anywhere.example');
    expect(any.headers['access-control-allow-origin']).to.equal('*');
    expect(any.headers).to.not.have.property('access-control-allow-credentials');
    expect(() => loadConfig({ DATA_DIR: g.config.dataDir, CORS_ORIGINS: '*', CORS_ALLOW_CREDENTIALS: 'true' }))
      .to.throw(ConfigError).with.property('variable', 'CORS_ALLOW_CREDENTIALS');
    expect(() => loadConfig({ DATA_DIR: g.config.dataDir, CORS_ORIGINS: 'app.example.com' })).to.throw(ConfigError).with.property('variable', 'CORS_ORIGINS');
  });
});
