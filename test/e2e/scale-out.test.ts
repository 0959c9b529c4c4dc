/**
 * Two real gateway processes on one PostgreSQL schema and one Redis (a key prefix of this run): a concurrent
 * burst on one key through both keeps the balance at or above zero and equal to the ledger, and the per-minute
 * limit holds across both (a per-process limit would admit twice as many); a breaker opened through one
 * instance is open on the other.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startGatewayProcess, type RunningGateway } from '../support/proc.js';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { postgresAvailable, postgresConfig } from '../support/db.js';
import { redisAvailable, testPrefix, REDIS_URL } from '../support/redis.js';
import { catalogFile, dbEnv, seedKey, ledgerMatchesBalances, SECRET } from '../support/cluster.js';
import type { Store } from '../../src/store/index.js';
import type { DatabaseConfig } from '../../src/config.js';

describe('e2e: two instances, one PostgreSQL and one Redis', function () {
  this.timeout(90_000);
  let sim: Simulator;
  let a: RunningGateway;
  let b: RunningGateway;
  let store: Store;
  let key: string;
  let userId: number;
  let db: DatabaseConfig;

  before(async function () {
    if (!(await postgresAvailable()) || !(await redisAvailable())) return this.skip();
    sim = await startSimulator();
    db = postgresConfig();
    ({ store, key, userId } = await seedKey(db, 0.01));
    const env = {
      ...dbEnv(db), REDIS_URL, REDIS_PREFIX: testPrefix(), KEY_HASH_SECRET: SECRET,
      CATALOG_FILE: catalogFile(sim.url, [['test/slow', 'sim/slow-1000ms'], ['test/broken', 'sim/error-500']]),
      RATE_LIMIT_RPM: '20', RATE_LIMIT_TPM: '0', RATE_LIMIT_CONCURRENT: '0', BREAKER_FAILURE_THRESHOLD: '2',
    };
    [a, b] = await Promise.all([
      startGatewayProcess({ ...env, DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-a-')) }),
      startGatewayProcess({ ...env, DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-b-')) }),
    ]);
    // Warm both processes (validators, connection pools) with another key, so the burst meets two ready instances.
    const warm = await seedKey(db, 1);
    for (const gw of [a, b]) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { Authorization: `Bearer ${warm.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'test/slow', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).to.equal(200);
    }
    await warm.store.close();
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await store?.close();
    await sim?.close();
  });

  const call = (gw: RunningGateway, model: string) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 1000 }),
  });

  it('a burst of 60 on one key through both: exactly 20 admitted, balance >= 0 throughout, ledger = balance', async () => {
    const start = await store.credits.balance(userId);
    expect(start).to.equal(10_000_000); // $0.01
    let lowest = start;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        lowest = Math.min(lowest, await store.credits.balance(userId));
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const results = await Promise.all(Array.from({ length: 60 }, async (_, i) => {
      const res = await call(i % 2 ? a : b, 'test/slow');
      return { via: i % 2 ? 'a' : 'b', status: res.status, body: await res.json() };
    }));
    sampling = false;
    await sampler;

    const count = (s: number) => results.filter((r) => r.status === s).length;
    // one minute limit across both processes: 20 admitted (served or refused for credits), 40 rate limited
    expect(count(429)).to.equal(40);
    expect(count(200) + count(402)).to.equal(20);
    expect(results.filter((r) => r.status === 429).every((r) => r.body.error.code === 'rate_limit_requests')).to.equal(true);
    // each request holds up to 2 + 1000 × 2 = 2,002 µ$ worst case: $0.01 covers 4 at a time, so the burst overdraws
    // unless holds are atomic across processes; some admitted requests are refused for credits
    expect(count(200)).to.be.within(4, 19);
    expect(count(402)).to.be.at.least(1);
    // Each process alone would admit up to 20 of its 30: only one shared window makes it 20 in all.
    const admitted = (via: string) => results.filter((r) => r.via === via && r.status !== 429).length;
    expect(admitted('a') + admitted('b')).to.equal(20);
    expect(lowest).to.be.at.least(0);
    // every success cost exactly 2 prompt + 2 completion tokens = 2 + 4 µ$ = 6,000 nano-USD
    expect(await store.credits.balance(userId)).to.equal(start - 6_000 * count(200));
    expect(await store.credits.openHoldCount(userId)).to.equal(0);
    expect(await ledgerMatchesBalances(store)).to.deep.include({ mismatched: [], negative: [] });
  });

  it('a breaker opened by failures through one instance refuses calls on the other, without calling upstream', async () => {
    const other = await seedKey(db, 1);
    try {
      const via = (gw: RunningGateway) => fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${other.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'test/broken', messages: [{ role: 'user', content: 'hello' }] }),
      });
      const first = await via(a); // the only candidate gets two tries: two failures open the breaker (threshold 2)
      expect(first.status).to.equal(502);
      const calls = sim.calls.length;
      const second = await via(b);
      expect(second.status).to.equal(503);
      expect((await second.json()).error.code).to.equal('circuit_open');
      expect(Number(second.headers.get('retry-after'))).to.be.within(1, 30);
      expect(sim.calls.length).to.equal(calls);
      expect(await other.store.credits.openHoldCount(other.userId)).to.equal(0);
    } finally {
      await other.store.close();
    }
  });
});
