/**
 * The rate-limit backends, the same behaviour in this process and in Redis: sliding 60-second windows in
 * one-second buckets, and concurrency leases that lapse when their process stops renewing them.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { MemoryLimitBackend, LEASE_TTL_MS, type LimitBackend } from '../../src/limits/backend.js';
import { RedisLimitBackend } from '../../src/limits/redis-backend.js';
import { redisAvailable, testPrefix, REDIS_URL } from '../support/redis.js';

// A whole second, so bucket boundaries are where the test expects them.
const T0 = 1_800_000_000_000;

const KINDS = ['memory', 'redis'] as const;

for (const kind of KINDS) {
  describe(`rate-limit backend: ${kind}`, () => {
    const conns: Redis[] = [];
    let prefix: string;
    const make = (): LimitBackend => {
      if (kind === 'memory') return new MemoryLimitBackend();
      const r = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      conns.push(r);
      return new RedisLimitBackend(r, prefix);
    };
    before(async function () {
      if (kind === 'redis' && !(await redisAvailable())) this.skip();
      prefix = testPrefix();
    });
    after(async () => {
      for (const c of conns) await c.quit();
    });

    it('take: at most `limit` in a window; the reset is when the oldest counted request leaves it', async () => {
      const b = make();
      const results = [];
      for (let i = 0; i < 4; i++) results.push(await b.take('k1', 3, T0 + 500));
      expect(results.map((r) => r.allowed)).to.deep.equal([true, true, true, false]);
      expect(results.map((r) => r.count)).to.deep.equal([1, 2, 3, 3]);
      // counted in second T0/1000, which leaves the window at T0 + 60 s: 59.5 s from T0 + 0.5 s
      expect(results[3].resetMs).to.equal(59_500);
      const later = await b.take('k1', 3, T0 + 30_000);
      expect(later).to.deep.equal({ allowed: false, count: 3, resetMs: 30_000 });
      expect((await b.take('k1', 3, T0 + 60_000)).allowed).to.equal(true);
      // another key has its own window
      expect((await b.take('k2', 3, T0 + 500)).count).to.equal(1);
    });

    it('the window slides: requests leave it one second-bucket at a time', async () => {
      const b = make();
      await b.take('s', 3, T0);
      await b.take('s', 3, T0);
      await b.take('s', 3, T0 + 30_000);
      expect((await b.take('s', 3, T0 + 59_999)).allowed).to.equal(false);
      // at T0 + 60 s the two of T0 are out, the one of T0 + 30 s is still in
      const a = await b.take('s', 3, T0 + 60_000);
      const c = await b.take('s', 3, T0 + 60_000);
      const d = await b.take('s', 3, T0 + 60_000);
      expect([a.allowed, c.allowed, d.allowed]).to.deep.equal([true, true, false]);
      expect(d).to.deep.equal({ allowed: false, count: 3, resetMs: 30_000 });
    });

    it('a window of many one-second buckets: each leaves exactly 60 s after its second', async () => {
      const b = make();
      for (let sec = 0; sec < 150; sec++) {
        const r = await b.take('many', 1000, T0 + sec * 1000 + 250);
        // seconds max(0, sec - 59) … sec are in the window, this one included
        expect(r.count, `second ${sec}`).to.equal(Math.min(sec + 1, 60));
      }
      await b.add('many-t', 5, T0);
      await b.add('many-t', 7, T0 + 59_000);
      expect((await b.read('many-t', T0 + 59_999)).count).to.equal(12);
      expect(await b.read('many-t', T0 + 60_000)).to.deep.equal({ allowed: true, count: 7, resetMs: 59_000 });
    });

    it('add and read: token counts over the window', async () => {
      const b = make();
      expect(await b.read('t', T0)).to.deep.equal({ allowed: true, count: 0, resetMs: 0 });
      await b.add('t', 1200, T0);
      await b.add('t', 300, T0 + 10_000);
      await b.add('t', 0, T0 + 10_000);
      expect(await b.read('t', T0 + 20_000)).to.deep.equal({ allowed: true, count: 1500, resetMs: 40_000 });
      expect((await b.read('t', T0 + 60_000)).count).to.equal(300);
      expect((await b.read('t', T0 + 70_000)).count).to.equal(0);
    });

    it('acquire and release: `limit` leases at once; a lease not renewed lapses, a renewed one does not', async () => {
      const b = make();
      expect(await b.acquire('c', 'a', 2, T0)).to.equal(true);
      expect(await b.acquire('c', 'b', 2, T0)).to.equal(true);
      expect(await b.acquire('c', 'x', 2, T0)).to.equal(false);
      await b.release('c', 'a');
      expect(await b.acquire('c', 'x', 2, T0 + 1)).to.equal(true);
      // b and x are held; x is renewed, b's process is "dead": after the lease TTL only b's slot comes back
      await b.renew('c', ['x'], T0 + LEASE_TTL_MS - 1);
      expect(await b.acquire('c', 'y', 2, T0 + LEASE_TTL_MS + 5)).to.equal(true);
      expect(await b.acquire('c', 'z', 2, T0 + LEASE_TTL_MS + 5)).to.equal(false);
      // renew does not resurrect a released lease
      await b.release('c', 'y');
      await b.renew('c', ['y'], T0 + LEASE_TTL_MS + 6);
      expect(await b.acquire('c', 'z', 2, T0 + LEASE_TTL_MS + 7)).to.equal(true);
    });

    if (kind === 'memory') {
      it('a key keeps its lease map after its last lease, until a new key finds 1,000 of them: the empty ones are dropped', async () => {
        const b = new MemoryLimitBackend();
        const maps = () => (b as unknown as { leases: Map<string, Map<string, number>> }).leases;
        // one request at a time on one key: the map stays, and the slots stay exact
        for (let i = 0; i < 3; i++) {
          expect(b.acquire('one', `l${i}`, 1, T0)).to.equal(true);
          expect(b.acquire('one', `m${i}`, 1, T0)).to.equal(false);
          await b.release('one', `l${i}`);
        }
        expect(maps().size).to.equal(1);
        expect(b.acquire('held', 'h', 1, T0)).to.equal(true);
        for (let k = 0; k < 998; k++) {
          expect(b.acquire(`k${k}`, 'a', 1, T0)).to.equal(true);
          await b.release(`k${k}`, 'a');
        }
        expect(maps().size).to.equal(1_000);
        // the 1,001st key sweeps: the held one and the new one are left
        expect(b.acquire('new', 'n', 1, T0)).to.equal(true);
        expect([...maps().keys()].sort()).to.deep.equal(['held', 'new']);
        expect(b.acquire('held', 'h2', 1, T0)).to.equal(false);
        await b.release('held', 'h');
        expect(b.acquire('held', 'h2', 1, T0)).to.equal(true);
      });
    }

    if (kind === 'redis') {
      it('two connections (two instances) racing 100 takes on one key admit exactly the limit', async () => {
        const [a, b] = [make(), make()];
        const all = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).take('race', 37, T0 + 100)));
        expect(all.filter((r) => r.allowed)).to.have.length(37);
        const slots = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).acquire('race', `l${i}`, 9, T0)));
        expect(slots.filter(Boolean)).to.have.length(9);
      });
    }
  });
}
