import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, ADMIN_KEY, type TestGateway } from '../support/app.js';
import { specOps } from '../support/spec.js';

describe('contract: authentication on every operation', () => {
  let gw: TestGateway;
  let key: string;
  let keyId: number;
  before(async () => {
    gw = await startTestGateway();
    ({ key, keyId } = await gw.newKey(1));
  });
  after(() => gw.close());

  const ops = specOps();
  const send = (o: (typeof ops)[number], headers: Record<string, string> = {}) =>
    (request(gw.app) as any)[o.method](o.url).set(headers);

  it('the spec declares bearer security on exactly the interface\'s protected operations', () => {
    const required = ops.filter((o) => o.security === 'required').map((o) => o.operationId).sort();
    expect(required).to.include.members(['createChatCompletion', 'createImage', 'createTranscription', 'createTranscriptionBase64',
      'executeTool', 'getStatusDetailed', 'updateChatSession', 'getHealthSummary', 'listModelHealth', 'getModelHealth',
      'listUnhealthyModels', 'getModelHealthStats', 'getProviderHealthSummary', 'listHealthProviders']);
    expect(ops.find((o) => o.operationId === 'searchAugment')!.security).to.equal('optional');
    for (const pub of ['listTools', 'getToolDefinitions', 'getTool', 'listRouters', 'listModels', 'hubSearch', 'getStatus', 'getLiveness']) {
      expect(ops.find((o) => o.operationId === pub)!.security, pub).to.equal('public');
    }
  });

  for (const o of specOps().filter((x) => x.security === 'required')) {
    it(`${o.operationId}: 401 with WWW-Authenticate without a key, with a malformed key, and with an unknown key`, async () => {
      for (const headers of [{}, { Authorization: 'Bearer nonsense' }, { Authorization: `Bearer gw_live_${'A'.repeat(43)}` }, { 'x-api-key': 'gw_live_short' }] as Array<Record<string, string>>) {
        const res = await send(o, headers);
        expect(res.status, `${o.method} ${o.url} ${JSON.stringify(headers)}`).to.equal(401);
        expect(res.headers['www-authenticate']).to.equal('Bearer');
        // Both error shapes (OpenAI's and, on /v1/messages, Anthropic's) put the class at error.type.
        expect(res.body.error.type).to.equal('authentication_error');
      }
    });
  }

  for (const o of specOps().filter((x) => x.security === 'public')) {
    it(`${o.operationId}: answers without a key`, async () => {
      const res = await send(o);
      expect(res.status, `${o.method} ${o.url}`).to.not.equal(401);
    });
  }

  it('accepts the key as Bearer and as x-api-key; a revoked key is refused at once', async () => {
    const other = await gw.newKey(1, 'revokable');
    for (const headers of [{ Authorization: `Bearer ${other.key}` }, { 'x-api-key': other.key }]) {
      const res = await request(gw.app).get('/v1/chat/sessions').set(headers);
      expect(res.status).to.equal(200);
    }
    expect(await gw.keys.revoke(other.keyId)).to.equal(true);
    const res = await request(gw.app).get('/v1/chat/sessions').set({ Authorization: `Bearer ${other.key}` });
    expect(res.status).to.equal(401);
    expect(keyId).to.be.a('number');
  });

  it('the admin key reaches admin-or-key operations; search augment takes guests but refuses a bad key', async () => {
    const detailed = await request(gw.app).get('/v1/status/detailed').set({ Authorization: `Bearer ${ADMIN_KEY}` });
    expect(detailed.status).to.not.equal(401);
    const guest = await request(gw.app).post('/v1/tools/search/augment').send({ query: 'x' });
    expect(guest.status).to.not.equal(401);
    const bad = await request(gw.app).post('/v1/tools/search/augment').set({ Authorization: 'Bearer gw_live_bad' }).send({ query: 'x' });
    expect(bad.status).to.equal(401);
  });

  it('a key is never echoed in an error body', async () => {
    const res = await request(gw.app).get('/v1/model-health').set({ Authorization: `Bearer ${key}x` });
    expect(res.status).to.equal(401);
    expect(JSON.stringify(res.body)).to.not.contain(key);
  });
});
