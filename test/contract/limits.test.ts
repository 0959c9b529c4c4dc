/**
 * Per-key rate limits over HTTP: the 429 body and headers, the X-RateLimit-* headers of admitted requests, the
 * admin operations that set a key's own limits, tokens counted from real completions and concurrency held by
 * an open stream. Token counts are the simulator's ("hello": prompt ceil(5/4) = 2, completion "Echo: hello" = 2).
 */
import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, ADMIN_KEY, type TestGateway } from '../support/app.js';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { fixtureCatalog, gw, offer } from '../support/catalog.js';

const as = (key: string) => ({ Authorization: `Bearer ${key}` });
const hello = (model: string, extra: object = {}) => ({ model, messages: [{ role: 'user', content: 'hello' }], ...extra });

describe('contract: per-key rate limits', function () {
  this.timeout(30_000);
  let sim: Simulator;
  let gwy: TestGateway;
  before(async () => {
    sim = await startSimulator();
    const catalog = fixtureCatalog({
      gateways: [{ ...gw('openai'), url: `${sim.url}/v1` }],
      offers: [offer('openai', 'sim/echo', 'test/echo'), offer('openai', 'sim/drip-200ms', 'test/drip')],
    });
    gwy = await startTestGateway({ services: { models: catalog }, env: { RATE_LIMIT_RPM: '3', RATE_LIMIT_TPM: '0', RATE_LIMIT_CONCURRENT: '0' } });
  });
  after(async () => {
    await gwy?.close();
    await sim?.close();
  });

  it('requests per minute: X-RateLimit-* count down, then 429 with Retry-After and the Error body', async () => {
    const { key } = await gwy.newKey(1);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await request(gwy.app).get('/v1/chat/sessions').set(as(key));
      expect(res.status).to.equal(200);
      expect(res.headers['x-ratelimit-limit']).to.equal('3');
      expect(Number(res.headers['x-ratelimit-reset'])).to.be.within(1, 60);
      remaining.push(res.headers['x-ratelimit-remaining']);
    }
    expect(remaining).to.deep.equal(['2', '1', '0']);
    const res = await request(gwy.app).get('/v1/chat/sessions').set(as(key)).set('X-Request-Id', 'rl-1');
    expect(res.status).to.equal(429);
    expect(res.body.error).to.deep.include({ type: 'rate_limit_error', code: 'rate_limit_requests', request_id: 'rl-1' });
    expect(res.body.error.message).to.match(/^Rate limit of 3 requests per minute reached for this key\. Retry after \d+s\.$/);
    expect(Number(res.headers['retry-after'])).to.be.within(1, 60);
    expect(res.headers['x-ratelimit-remaining']).to.equal('0');
    expect(res.headers['x-ratelimit-reset']).to.equal(res.headers['retry-after']);
    // another key has its own minute; public operations and the admin credential are not limited per key
    const other = await gwy.newKey(1);
    expect((await request(gwy.app).get('/v1/chat/sessions').set(as(other.key))).status).to.equal(200);
    expect((await request(gwy.app).get('/v1/tools')).headers['x-ratelimit-limit']).to.equal(undefined);
  });

  it('admin operations: an API key gets 403, unknown keys 404, bad values 422; new limits apply at once', async () => {
    const { key, keyId } = await gwy.newKey(1);
    for (let i = 0; i < 3; i++) await request(gwy.app).get('/v1/chat/sessions').set(as(key));
    expect((await request(gwy.app).get('/v1/chat/sessions').set(as(key))).status).to.equal(429);

    const denied = await request(gwy.app).put(`/v1/admin/keys/${keyId}/limits`).set(as(key)).send({ requests_per_minute: 1000 });
    expect(denied.status).to.equal(403);
    expect(denied.body.error.type).to.equal('permission_error');
    expect((await request(gwy.app).get(`/v1/admin/keys/${keyId}/limits`).set(as(ADMIN_KEY))).body).to.deep.equal({
      key_id: keyId,
      overrides: { requests_per_minute: null, tokens_per_minute: null, concurrent_requests: null },
      effective: { requests_per_minute: 3, tokens_per_minute: 0, concurrent_requests: 0 },
    });
    expect((await request(gwy.app).get('/v1/admin/keys/987654/limits').set(as(ADMIN_KEY))).status).to.equal(404);
    const bad = await request(gwy.app).put(`/v1/admin/keys/${keyId}/limits`).set(as(ADMIN_KEY)).send({ requests_per_minute: -1 });
    expect(bad.status).to.equal(422);
    expect(bad.body.detail[0].loc).to.deep.equal(['body', 'requests_per_minute']);

    const set = await request(gwy.app).put(`/v1/admin/keys/${keyId}/limits`).set(as(ADMIN_KEY)).send({ requests_per_minute: 5, concurrent_requests: 2 });
    expect(set.status).to.equal(200);
    expect(set.body.effective).to.deep.equal({ requests_per_minute: 5, tokens_per_minute: 0, concurrent_requests: 2 });
    const after = [];
    for (let i = 0; i < 3; i++) after.push((await request(gwy.app).get('/v1/chat/sessions').set(as(key))).status);
    expect(after).to.deep.equal([200, 200, 429]);
    expect(await gwy.store.limits.get(keyId)).to.deep.equal({ requests_per_minute: 5, tokens_per_minute: null, concurrent_requests: 2 });
  });

  it('tokens per minute: counted from completed requests, refused once spent (code rate_limit_tokens)', async () => {
    const { key, keyId } = await gwy.newKey(1);
    await request(gwy.app).put(`/v1/admin/keys/${keyId}/limits`).set(as(ADMIN_KEY)).send({ requests_per_minute: 0, tokens_per_minute: 7 });
    const first = await request(gwy.app).post('/v1/chat/completions').set(as(key)).send(hello('test/echo'));
    expect(first.status).to.equal(200);
    expect(first.headers['x-ratelimit-remaining-tokens']).to.equal('7');
    await gwy.services.recorder.flush(); // 4 tokens counted
    const second = await request(gwy.app).post('/v1/chat/completions').set(as(key)).send(hello('test/echo'));
    expect(second.status).to.equal(200);
    expect(second.headers['x-ratelimit-remaining-tokens']).to.equal('3');
    await gwy.services.recorder.flush(); // 8 of 7
    const third = await request(gwy.app).post('/v1/chat/completions').set(as(key)).send(hello('test/echo'));
    expect(third.status).to.equal(429);
    expect(third.body.error.code).to.equal('rate_limit_tokens');
    expect(third.headers['x-ratelimit-remaining-tokens']).to.equal('0');
    expect(Number(third.headers['retry-after'])).to.be.within(1, 60);
  });

  it('concurrent requests: an open stream holds its slot until its last byte', async () => {
    const { key, keyId } = await gwy.newKey(1);
    await request(gwy.app).put(`/v1/admin/keys/${keyId}/limits`).set(as(ADMIN_KEY)).send({ requests_per_minute: 0, concurrent_requests: 1 });
    const server = gwy.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as any).port}`;
    try {
      const stream = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { ...as(key), 'content-type': 'application/json' }, body: JSON.stringify(hello('test/drip', { stream: true })) });
      expect(stream.status).to.equal(200);
      const busy = await fetch(`${url}/v1/chat/sessions`, { headers: as(key) });
      expect(busy.status).to.equal(429);
      expect(busy.headers.get('retry-after')).to.equal('1');
      expect((await busy.json()).error.code).to.equal('rate_limit_concurrency');
      const text = await stream.text();
      expect(text).to.contain('data: [DONE]');
      // the slot is given back when the server has closed the response (just after the client read its end)
      let status = 0;
      for (let i = 0; i < 40 && status !== 200; i++) {
        status = (await fetch(`${url}/v1/chat/sessions`, { headers: as(key) })).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 25));
      }
      expect(status).to.equal(200);
    } finally {
      server.close();
    }
  });
});
