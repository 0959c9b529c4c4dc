/**
 * Search-augment guests are limited per client address. With REDIS_URL two instances share the count; the
 * address comes from X-Forwarded-For only when TRUST_PROXY says which proxies to believe — otherwise a guest
 * could reset their own limit by sending the header.
 */
import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { redisAvailable, testPrefix, REDIS_URL } from '../support/redis.js';

const augment = (g: TestGateway, forwardedFor?: string) => {
  const r = request(g.app).post('/v1/tools/search/augment');
  return (forwardedFor ? r.set('X-Forwarded-For', forwardedFor) : r).send({ query: 'weather' });
};

describe('contract: search-augment guests limited per address', () => {
  const gateways: TestGateway[] = [];
  after(async () => { for (const g of gateways) await g.close(); });

  it('two instances sharing Redis count one limit per guest address (behind a trusted proxy)', async function () {
    if (!(await redisAvailable())) return this.skip();
    const env = { REDIS_URL, REDIS_PREFIX: testPrefix(), GUEST_AUGMENT_PER_MINUTE: '2', TRUST_PROXY: 'loopback' };
    const [a, b] = [await startTestGateway({ env }), await startTestGateway({ env })];
    gateways.push(a, b);
    expect((await augment(a, '203.0.113.7')).status).to.equal(200);
    expect((await augment(b, '203.0.113.7')).status).to.equal(200);
    const third = await augment(a, '203.0.113.7');
    expect(third.status).to.equal(429);
    expect(third.body.error).to.include({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(Number(third.headers['retry-after'])).to.be.within(1, 60);
    expect((await augment(b, '203.0.113.7')).status).to.equal(429);
    // another guest address has its own count
    expect((await augment(b, '203.0.113.8')).status).to.equal(200);
  });

  it('without TRUST_PROXY a forged X-Forwarded-For does not give a guest a fresh limit', async () => {
    const g = await startTestGateway({ env: { GUEST_AUGMENT_PER_MINUTE: '2' } });
    gateways.push(g);
    expect((await augment(g, '198.51.100.1')).status).to.equal(200);
    expect((await augment(g, '198.51.100.2')).status).to.equal(200);
    expect((await augment(g, '198.51.100.3')).status).to.equal(429);
  });
});
