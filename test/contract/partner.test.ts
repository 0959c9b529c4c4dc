import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { startFakeUpstream, json, type FakeUpstream } from '../support/upstream.js';

/** The registry's GET /models answer (the contract documented in src/facades/partner.ts). */
const REGISTRY = [
  { model_id: 'acme/small-llm', name: 'Small LLM', symbol: 'SML', token_address: '0xaaa', chain: 'base', is_graduated: false,
    market_cap_usd: 12000.5, price_usd: 0.0012, holders: 40, created_at: '2025-01-02T03:04:05Z' },
  { model_id: 'acme/big-llm', name: 'Big LLM', symbol: 'BIG', token_address: '0xbbb', chain: 'base', is_graduated: true,
    market_cap_usd: 2500000, price_usd: 1.25, holders: 9000, created_at: '2024-06-01T00:00:00.000Z' },
  { model_id: 'zeta-7b', name: 'Zeta', symbol: 'ZET', token_address: '0xccc', chain: 'solana', is_graduated: true,
    market_cap_usd: null, price_usd: null, holders: null, created_at: null },
  { model_id: 'alpha-7b', symbol: 'ALP', token_address: '0xddd', chain: 'solana', is_graduated: false,
    market_cap_usd: 12000.5, price_usd: -3, holders: 1.5, created_at: 'not a date' },
  { name: 'no id', is_graduated: true },
  { model_id: 'no-flag', name: 'missing is_graduated' },
];

describe('contract: partner token-catalog facade', () => {
  let up: FakeUpstream;
  let gw: TestGateway;
  let mode: 'ok' | 'fail' | 'hang' = 'ok';

  before(async () => {
    up = await startFakeUpstream((req, res) => {
      if (mode === 'hang') return;
      if (mode === 'fail') return json(res, 500, { error: 'db down' });
      if (req.url === '/models') return json(res, 200, REGISTRY);
      json(res, 404, {});
    });
    gw = await startTestGateway({ env: { PARTNER_BASE_URL: up.url, PARTNER_API_KEY: 'pk-test', PARTNER_TIMEOUT_MS: '300', PARTNER_CACHE_TTL_MS: '0' } });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });
  beforeEach(() => { mode = 'ok'; });

  it('lists models by market cap (unknown last, ties by id), normalising what the registry sent', async () => {
    const res = await request(gw.app).get('/v1/partner/models');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(up.requests.at(-1)!.headers.authorization).to.equal('Bearer pk-test');
    expect(res.body.models.map((m: any) => m.model_id)).to.deep.equal(['acme/big-llm', 'acme/small-llm', 'alpha-7b', 'zeta-7b']);
    expect(res.body).to.include({ count: 4, is_graduated: null });
    expect(res.body.models[1]).to.deep.equal({ ...REGISTRY[0], created_at: '2025-01-02T03:04:05.000Z' });
    expect(res.body.models[2]).to.deep.equal({ model_id: 'alpha-7b', name: 'alpha-7b', symbol: 'ALP', token_address: '0xddd', chain: 'solana',
      is_graduated: false, market_cap_usd: 12000.5, price_usd: null, holders: null, created_at: null });
  });

  it('is_graduated filters: true, false, absent = all', async () => {
    const t = await request(gw.app).get('/v1/partner/models?is_graduated=true');
    expect(t.body.models.map((m: any) => m.model_id)).to.deep.equal(['acme/big-llm', 'zeta-7b']);
    expect(t.body).to.include({ count: 2, is_graduated: true });
    const f = await request(gw.app).get('/v1/partner/ids?is_graduated=false');
    expect(f.body).to.deep.equal({ ids: ['acme/small-llm', 'alpha-7b'], count: 2 });
    const all = await request(gw.app).get('/v1/partner/ids');
    expect(all.body.count).to.equal(4);
    const bad = await request(gw.app).get('/v1/partner/ids?is_graduated=maybe');
    expect(bad.status).to.equal(422);
  });

  it('check: an id with a slash (%2F) is found with its details; a filtered-out or unknown id is exists false', async () => {
    const hit = await request(gw.app).get('/v1/partner/check/acme%2Fbig-llm');
    expect(hit.status).to.equal(200);
    expect(hit.body).to.include({ model_id: 'acme/big-llm', exists: true });
    expect(hit.body.details.symbol).to.equal('BIG');
    const filtered = await request(gw.app).get('/v1/partner/check/acme%2Fbig-llm?is_graduated=false');
    expect(filtered.body).to.deep.equal({ model_id: 'acme/big-llm', exists: false, details: null });
    const none = await request(gw.app).get('/v1/partner/check/nothing-here');
    expect(none.body).to.deep.equal({ model_id: 'nothing-here', exists: false, details: null });
  });

  it('registry failure is 502, a hanging registry 504', async () => {
    mode = 'fail';
    const failed = await request(gw.app).get('/v1/partner/models');
    expect(failed.status).to.equal(502);
    expect(failed.body.error.type).to.equal('upstream_error');
    expect(JSON.stringify(failed.body)).to.not.contain('db down');
    mode = 'hang';
    const slow = await request(gw.app).get('/v1/partner/ids');
    expect(slow.status).to.equal(504);
  });

  it('the catalog is cached for PARTNER_CACHE_TTL_MS', async () => {
    const cached = await startTestGateway({ env: { PARTNER_BASE_URL: up.url } });
    try {
      const before = up.requests.length;
      await request(cached.app).get('/v1/partner/models');
      await request(cached.app).get('/v1/partner/ids?is_graduated=true');
      await request(cached.app).get('/v1/partner/check/zeta-7b');
      expect(up.requests.length - before).to.equal(1);
    } finally {
      await cached.close();
    }
  });

  it('503 on every partner operation when PARTNER_BASE_URL is not set', async () => {
    const bare = await startTestGateway({ env: { PARTNER_BASE_URL: '' } });
    try {
      for (const path of ['/v1/partner/models', '/v1/partner/ids', '/v1/partner/check/x']) {
        const res = await request(bare.app).get(path);
        expect(res.status, path).to.equal(503);
        expect(res.body.error.code).to.equal('partner_not_configured');
      }
    } finally {
      await bare.close();
    }
  });
});
