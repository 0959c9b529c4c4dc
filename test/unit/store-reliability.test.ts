/** Per-key limit overrides and crash recovery of credit holds, on SQLite and PostgreSQL. */
import { expect } from 'chai';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { openStore, type Store } from '../../src/store/index.js';
import { InstanceTracker } from '../../src/reliability/instances.js';
import { createLogger } from '../../src/logger.js';
import type { DatabaseConfig } from '../../src/config.js';
import { configFor, postgresAvailable, DIALECTS } from '../support/db.js';

/** The pid of a process that has exited (pids are not reused at once). */
const deadPid = (): number => spawnSync(process.execPath, ['-e', '0']).pid!;

for (const dialect of DIALECTS) {
  describe(`store reliability on ${dialect}`, function () {
    let cfg: DatabaseConfig;
    let store: Store;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      cfg = configFor(dialect);
      store = await openStore(cfg);
    });
    after(async () => { await store?.close(); });

    it('limits: none by default; set replaces, all-null clears to the defaults', async () => {
      const uid = await store.keys.createUser('lim');
      const k = await store.keys.insert(uid, 'k', `h-${Math.random()}`, 'gw_live_x');
      expect(await store.limits.get(k.id)).to.equal(undefined);
      await store.limits.set(k.id, { requests_per_minute: 5, tokens_per_minute: 3_000_000_000, concurrent_requests: null });
      expect(await store.limits.get(k.id)).to.deep.equal({ requests_per_minute: 5, tokens_per_minute: 3_000_000_000, concurrent_requests: null });
      await store.limits.set(k.id, { requests_per_minute: null, tokens_per_minute: null, concurrent_requests: 0 });
      expect(await store.limits.get(k.id)).to.deep.equal({ requests_per_minute: null, tokens_per_minute: null, concurrent_requests: 0 });
    });

    it('start-up reconciliation releases expired holds and every hold of a dead instance, and nothing else', async () => {
      const now = Date.now();
      const uid = await store.keys.createUser('holder');
      await store.credits.grant(uid, 1_000_000);
      // Holds of other processes are made through a second connection to the same database.
      const other = await openStore(cfg);
      const holdAs = async (instance: string | null, id: string, amount: number, ttl = 600_000) => {
        if (instance) other.credits.bindInstance(instance);
        expect(await other.credits.hold(uid, id, amount, ttl)).to.equal(true);
      };
      const register = (id: string, over: Partial<{ hostname: string; pid: number; heartbeat_at: number }> = {}) =>
        other.instances.register({ id, hostname: os.hostname(), pid: process.pid, started_at: now - 1000, heartbeat_at: now, ...over });
      await register('dead-pid', { pid: deadPid() }); // same host, process gone: dead at once
      await register('remote-live', { hostname: 'another-host', pid: 1 }); // other host, fresh heartbeat: alive
      await register('remote-silent', { hostname: 'another-host', pid: 1, heartbeat_at: now - 60_000 }); // silent for 60 s: dead
      await register('stopped');
      await other.instances.markStopped('stopped', now);
      await register('local-live'); // this very process: alive
      await holdAs('dead-pid', 'h-dead', 1000);
      await holdAs('remote-live', 'h-remote', 2000);
      await holdAs('remote-silent', 'h-silent', 3000);
      await holdAs('stopped', 'h-stopped', 4000);
      await holdAs('never-registered', 'h-ghost', 5000);
      await holdAs('local-live', 'h-local', 6000);
      other.credits.bindInstance('remote-live');
      await holdAs(null, 'h-expired', 7000, -1);
      expect(await store.credits.balance(uid)).to.equal(1_000_000 - 28_000);

      const tracker = new InstanceTracker(store, createLogger('silent'), 1000);
      await tracker.start();
      // released: dead pid, silent, stopped, unregistered (orphans) and the expired one; kept: remote-live, local-live
      expect(await store.credits.openHoldCount(uid)).to.equal(2);
      expect(await store.credits.balance(uid)).to.equal(1_000_000 - 8_000);
      // the two kept (2,000 + 6,000) are still open: the ledger sums to the balance plus them
      expect(await store.credits.openHoldSum(uid)).to.equal(8_000);
      expect(await store.credits.ledgerSum(uid)).to.equal(await store.credits.balance(uid) + 8_000);
      expect(await tracker.reconcile()).to.deep.equal({ expired: 0, orphaned: 0 });

      // this process's own holds carry its id; a clean stop gives them back and marks it stopped
      expect(await store.credits.hold(uid, 'h-mine', 500, 600_000)).to.equal(true);
      const row = await store.db.selectFrom('credit_holds').select('instance_id').where('id', '=', 'h-mine').executeTakeFirstOrThrow();
      expect(row.instance_id).to.equal(tracker.id);
      await tracker.stop();
      expect(await store.credits.openHoldCount(uid)).to.equal(2);
      const [me] = await store.instances.get([tracker.id]);
      expect(me.stopped_at).to.be.a('number');
      await other.close();
    });

    it("a hold stores its process's instance id as given, quotes and all, and releaseInstance finds it", async () => {
      const uid = await store.keys.createUser('quoted');
      await store.credits.grant(uid, 10_000);
      const other = await openStore(cfg);
      try {
        const odd = `it's "odd" ${Math.random()}`;
        other.credits.bindInstance(odd);
        expect(await other.credits.hold(uid, `h-odd-${odd}`, 1_500, 600_000)).to.equal(true);
        const row = await store.db.selectFrom('credit_holds').select(['instance_id', 'user_id', 'amount_nano'])
          .where('id', '=', `h-odd-${odd}`).executeTakeFirstOrThrow();
        expect(row.instance_id).to.equal(odd);
        expect([Number(row.user_id), Number(row.amount_nano)]).to.deep.equal([uid, 1_500]);
        expect(await store.credits.releaseInstance(odd)).to.equal(1);
        expect(await store.credits.balance(uid)).to.equal(10_000);
      } finally {
        await other.close();
      }
    });
  });
}
