/**
 * Keys stay secret, checked on the real process and its real log output (LOG_LEVEL=debug, so every line that
 * could carry one is written): a fake upstream quotes the credentials it was sent in every error it can
 * produce (JSON errors of each status, an error event inside a stream); the client's answers and the process's
 * log hold neither the client's key nor the gateway's provider key nor the admin key.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startGatewayProcess } from '../support/proc.js';
import { startFakeUpstream, json, type FakeUpstream } from '../support/upstream.js';
import { configFor } from '../support/db.js';
import { dbEnv, seedKey, SECRET } from '../support/cluster.js';

// shaped like no well-known key, so only exact-value redaction can catch it
const PROVIDER_KEY = 'Prov1der.LEAKCANARY.0123456789abcdef';
const ADMIN = 'admin-LEAKCANARY-0123456789';

describe('e2e: keys never in answers or logs (real process)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  before(async () => {
    // Quotes the credential back in every failure, like "Incorrect API key provided: sk-…".
    upstream = await startFakeUpstream((req, res) => {
      const cred = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      const model = JSON.parse(req.body || '{}').model as string;
      const status = Number(/leak-(\d+)/.exec(model)?.[1] ?? 0);
      if (status) return json(res, status, { error: { message: `Incorrect API key provided: ${cred}. Header was Bearer ${cred}`, type: 'x', code: 'k' } }, status === 429 ? { 'retry-after': '1' } : {});
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c1', choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' } }] })}\n\n`);
      res.end(`data: ${JSON.stringify({ error: { message: `stream failed for key ${cred}` } })}\n\n`);
    });
  });
  after(async () => { await upstream?.close(); });

  it('upstream errors quoting the provider key, and bad client keys, leak nothing to the client or the log', async () => {
    const db = configFor('sqlite');
    const catalog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gw-leak-')), 'catalog.json');
    const models = ['leak-400', 'leak-401', 'leak-403', 'leak-404', 'leak-429', 'leak-500', 'leak-503', 'leak-stream'];
    fs.writeFileSync(catalog, JSON.stringify({
      gateways: [{ id: 'openai', url: upstream.url, key: PROVIDER_KEY }],
      offers: models.map((m) => ({ gateway: 'openai', upstreamModel: m, modelId: `t/${m}`, pricing: { prompt: 1e-6, completion: 1e-6 } })),
    }));
    const { store, key, keyId } = await seedKey(db, 1);
    const gw = await startGatewayProcess({ ...dbEnv(db), KEY_HASH_SECRET: SECRET, ADMIN_API_KEY: ADMIN, CATALOG_FILE: catalog, LOG_LEVEL: 'debug',
      DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-leak-')), BREAKER_FAILURE_THRESHOLD: '1000' });
    const answers: string[] = [];
    const call = async (pathname: string, headers: Record<string, string>, body?: unknown) => {
      const res = await fetch(`${gw.url}${pathname}`, { method: body ? 'POST' : 'GET', headers: { 'content-type': 'application/json', ...headers }, body: body ? JSON.stringify(body) : undefined });
      const text = await res.text();
      answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${text}`);
      return { status: res.status, text };
    };
    try {
      for (const m of models) {
        for (const stream of [false, true]) {
          const r = await call('/v1/chat/completions', { Authorization: `Bearer ${key}` }, { model: `t/${m}`, messages: [{ role: 'user', content: 'hi' }], stream });
          expect(r.status).to.be.oneOf([200, 400, 429, 502, 503]);
        }
        await call('/v1/messages', { 'x-api-key': key }, { model: `t/${m}`, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
      }
      // the upstream did quote the provider key: the test would see a leak
      expect(upstream.requests.length).to.be.greaterThan(10);
      for (const k of [`${key}x`, key.slice(0, -1), `gw_live_${'Z'.repeat(43)}`, ADMIN.slice(0, -1)]) {
        expect((await call('/v1/chat/sessions', { Authorization: `Bearer ${k}` })).status).to.equal(401);
      }
      expect((await call(`/v1/admin/keys/${keyId}/limits`, { Authorization: `Bearer ${ADMIN}` })).status).to.equal(200);
      await store.keys.revoke(keyId);
    } finally {
      expect(await gw.stop()).to.equal(0);
      await store.close();
    }
    const logs = gw.logs();
    expect(logs.split('\n').filter(Boolean).length).to.be.greaterThan(30);
    for (const secret of [key, PROVIDER_KEY, ADMIN, key.slice(8, 30)]) {
      expect(answers.filter((a) => a.includes(secret)), `answers hold ${secret.slice(0, 12)}…`).to.deep.equal([]);
      expect(logs.includes(secret), `the log holds ${secret.slice(0, 12)}…`).to.equal(false);
    }
    // the redacted upstream messages still say what happened
    expect(answers.join('\n')).to.contain('Incorrect API key provided: [redacted]');
  });
});
