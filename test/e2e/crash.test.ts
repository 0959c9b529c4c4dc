/**
 * The gateway process killed and stopped for real. kill -9 under streaming load, then a restart: the restarted
 * process releases the dead one's holds before it serves (its pid is gone: docs/RELIABILITY.md), the ledger
 * still equals every balance and the database opens cleanly. SIGTERM: in-flight streams finish within
 * SHUTDOWN_GRACE_MS and their usage is written before the process exits; a stream longer than the grace period
 * is cut, recorded as cancelled, and its hold released.
 * Costs: prompt "hello" = 2 tokens at $1/M, `sim/drip-*` replies "w1 … w5 " = 5 tokens at $2/M: 12,000 nano-USD.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { startGatewayProcess, type RunningGateway } from '../support/proc.js';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { configFor, postgresAvailable, DIALECTS } from '../support/db.js';
import { catalogFile, dbEnv, seedKey, ledgerMatchesBalances, SECRET } from '../support/cluster.js';
import { readSse, type SseEvent } from '../../src/stream/sse.js';
import type { DatabaseConfig } from '../../src/config.js';

async function openStream(url: string, key: string, model: string, requestId: string) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json', 'X-Request-Id': requestId },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], stream: true, max_tokens: 100 }),
  });
  expect(res.status).to.equal(200);
  const it = readSse(res.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const first = await it.next(); // the stream is open and its hold is held
  expect(first.done).to.equal(false);
  /** The rest of the stream, and how it ended. */
  const rest = async (): Promise<{ events: SseEvent[]; broke: boolean }> => {
    const events: SseEvent[] = [first.value as SseEvent];
    try {
      for (let s = await it.next(); !s.done; s = await it.next()) events.push(s.value);
      return { events, broke: false };
    } catch {
      return { events, broke: true };
    }
  };
  return { rest };
}

for (const dialect of DIALECTS) {
  describe(`e2e: kill -9 under streaming load, then restart (${dialect})`, function () {
    this.timeout(90_000);
    let sim: Simulator;
    let db: DatabaseConfig;
    let env: Record<string, string>;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      sim = await startSimulator();
      db = configFor(dialect);
      env = { ...dbEnv(db), KEY_HASH_SECRET: SECRET, DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-crash-')),
        CATALOG_FILE: catalogFile(sim.url, [['test/drip', 'sim/drip-400ms'], ['test/echo', 'sim/echo']]) };
    });
    after(async () => { await sim?.close(); });

    it('no hold stays held after the restart, the ledger equals every balance, the database opens cleanly', async () => {
      const { store, key, userId } = await seedKey(db, 1);
      let second: RunningGateway | undefined;
      try {
        const first = await startGatewayProcess(env);
        const streams = await Promise.all(Array.from({ length: 8 }, (_, i) => openStream(first.url, key, 'test/drip', `kill-${i}`)));
        expect(await store.credits.openHoldCount(userId)).to.equal(8);
        const start = 1_000_000_000;
        expect(await store.credits.balance(userId)).to.be.below(start);

        expect(await first.stop('SIGKILL')).to.equal(null);
        const ends = await Promise.all(streams.map((s) => s.rest()));
        expect(ends.every((e) => e.broke)).to.equal(true);
        expect(await store.credits.openHoldCount(userId)).to.equal(8); // the dead process could not give them back

        if (db.dialect === 'sqlite') {
          const file = new SQLite(db.file, { readonly: true });
          expect(file.pragma('integrity_check', { simple: true })).to.equal('ok');
          file.close();
        }
        second = await startGatewayProcess(env);
        // released during start-up, before the new process served anything
        expect(await store.credits.openHoldCount(userId)).to.equal(0);
        expect(await store.credits.balance(userId)).to.equal(start);
        expect(await ledgerMatchesBalances(store)).to.deep.include({ mismatched: [], negative: [] });
        const log = second.logs().split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.msg === 'released credit holds of dead requests');
        expect(log).to.include({ orphaned: 8, expired: 0 });
        // and it serves: a request is charged exactly
        const res = await fetch(`${second.url}/v1/chat/completions`, {
          method: 'POST', headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'test/echo', messages: [{ role: 'user', content: 'hello' }] }),
        });
        expect(res.status).to.equal(200);
        expect(await store.credits.balance(userId)).to.equal(start - 6_000);
      } finally {
        await second?.stop();
        await store.close();
      }
    });
  });
}

describe('e2e: SIGTERM drains in-flight streams', function () {
  this.timeout(60_000);
  let sim: Simulator;
  before(async () => { sim = await startSimulator(); });
  after(async () => { await sim?.close(); });

  const setup = async (graceMs: number) => {
    const db = configFor('sqlite');
    const env = { ...dbEnv(db), KEY_HASH_SECRET: SECRET, DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-term-')), SHUTDOWN_GRACE_MS: String(graceMs),
      CATALOG_FILE: catalogFile(sim.url, [['test/drip', 'sim/drip-300ms'], ['test/long', 'sim/drip-2000ms']]) };
    const seeded = await seedKey(db, 1);
    return { ...seeded, gw: await startGatewayProcess(env) };
  };

  it('a stream in flight completes, the process exits 0, and the stream\'s usage row and charge are in the database', async () => {
    const { store, key, userId, gw } = await setup(10_000);
    try {
      const s = await openStream(gw.url, key, 'test/drip', 'drain-1');
      const exited = gw.stop('SIGTERM');
      const { events, broke } = await s.rest();
      expect(broke).to.equal(false);
      expect(events.at(-1)!.data).to.equal('[DONE]');
      expect(events.map((e) => e.data).filter((d) => d !== '[DONE]').map((d) => JSON.parse(d).choices[0]?.delta?.content ?? '').join('')).to.equal('w1 w2 w3 w4 w5 ');
      expect(await exited).to.equal(0);
      const rows = await store.usage.byRequestId('drain-1');
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ status: 'success', http_status: 200, prompt_tokens: 2, completion_tokens: 5 });
      expect(Number(rows[0].cost_nano)).to.equal(12_000);
      expect(await store.credits.balance(userId)).to.equal(1_000_000_000 - 12_000);
      expect(await store.credits.openHoldCount(userId)).to.equal(0);
      expect(gw.logs()).to.contain('"msg":"stopped"');
    } finally {
      await store.close();
    }
  });

  it('a stream longer than SHUTDOWN_GRACE_MS is cut at the deadline: recorded as cancelled, its hold released', async () => {
    const { store, key, userId, gw } = await setup(500);
    try {
      const s = await openStream(gw.url, key, 'test/long', 'drain-2');
      const exited = gw.stop('SIGTERM');
      const { broke, events } = await s.rest();
      expect(broke || events.at(-1)!.data !== '[DONE]').to.equal(true);
      expect(await exited).to.equal(0);
      const rows = await store.usage.byRequestId('drain-2');
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ status: 'cancelled', http_status: 499, error_class: 'client_disconnected' });
      expect(await store.credits.openHoldCount(userId)).to.equal(0);
      expect(await store.credits.balance(userId)).to.equal(1_000_000_000);
      expect(gw.logs()).to.contain('grace period over');
    } finally {
      await store.close();
    }
  });
});
