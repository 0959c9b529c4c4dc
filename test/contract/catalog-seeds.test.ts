import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import request from 'supertest';
import OpenAI from 'openai';
import { startTestGateway, type TestGateway } from '../support/app.js';

/** The gateway with the shipped seeds only (no key, no network): the catalog answers offline. */
describe('catalog: the shipped seeds, offline', () => {
  let gw: TestGateway;
  let server: Server;
  before(async () => {
    gw = await startTestGateway();
    server = gw.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
  });
  after(async () => {
    server.close();
    await gw.close();
  });

  it('compares a widely served model across the seeded gateways', async () => {
    const res = await request(gw.app).get('/v1/models/meta-llama/llama-3.3-70b-instruct/compare');
    expect(res.status).to.equal(200);
    expect(res.body.gateways.map((g: any) => g.gateway)).to.include.members(['groq', 'together', 'deepinfra', 'openrouter']);
    expect(res.body.gateways.every((g: any) => g.available === false)).to.equal(true); // no gateway has a key here
    expect(res.body.savings_percent).to.be.a('number');
  });

  it('lists every gateway and the unique models served by several of them', async () => {
    const gateways = await request(gw.app).get('/v1/gateways');
    expect(gateways.body.count).to.equal(16);
    const unique = await request(gw.app).get('/v1/models/unique?min_providers=5&limit=1000');
    expect(unique.body.total).to.be.at.least(10);
    expect(unique.body.models.every((m: any) => m.provider_count >= 5)).to.equal(true);
  });

  it("the OpenAI SDK's models.list() pages the catalog", async () => {
    const port = (server.address() as AddressInfo).port;
    const client = new OpenAI({ apiKey: 'unused', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    const page = await client.models.list({ query: { limit: 3, provider: 'anthropic' } } as any);
    expect(page.data).to.have.length(3);
    for (const m of page.data) {
      expect(m).to.include({ object: 'model', owned_by: 'anthropic' });
      expect(m.id).to.match(/^anthropic\//);
      expect(m.created).to.be.a('number');
    }
  });
});
