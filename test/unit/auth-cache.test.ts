import { expect } from 'chai';
import { KeyService } from '../../src/auth.js';
import { openStore, type Store } from '../../src/store/index.js';
import { configFor } from '../support/db.js';

/** KeyService's cache: keyed by the presented key, so a key seen within the TTL costs no HMAC and no lookup. */
describe('api keys: the authentication cache', () => {
  let store: Store;
  before(async () => {
    store = await openStore(configFor('sqlite'));
  });
  after(() => store.close());

  it('one HMAC and one lookup per key per TTL; unknown keys are cached as unknown; a copy of the principal each time', async () => {
    let now = 1_000_000;
    const svc = new KeyService(store.keys, 'secret', undefined, 5_000);
    const { key, record } = await svc.create('alice');
    let hashes = 0;
    const hash = svc.hash.bind(svc);
    svc.hash = (k: string) => { hashes++; return hash(k); };
    const realNow = Date.now;
    Date.now = () => now;
    try {
      const a = await svc.authenticate(key);
      const b = await svc.authenticate(key);
      expect(a).to.deep.equal({ keyId: record.id, userId: record.user_id, admin: false });
      expect(b).to.deep.equal(a);
      expect(b).to.not.equal(a); // a caller changing its principal changes nobody else's
      expect(hashes).to.equal(1);
      const unknown = `gw_live_${'A'.repeat(43)}`;
      expect(await svc.authenticate(unknown)).to.equal(null);
      expect(await svc.authenticate(unknown)).to.equal(null);
      expect(hashes).to.equal(2);
      now += 5_001; // past the TTL: looked up again
      expect(await svc.authenticate(key)).to.deep.equal(a);
      expect(hashes).to.equal(3);
    } finally {
      Date.now = realNow;
    }
  });

  it('a malformed key is refused at once, never hashed or looked up, whatever was cached before it', async () => {
    const svc = new KeyService(store.keys, 'secret', undefined, 5_000);
    const { key } = await svc.create('carol');
    let hashes = 0;
    const hash = svc.hash.bind(svc);
    svc.hash = (k: string) => { hashes++; return hash(k); };
    expect(await svc.authenticate(key)).to.not.equal(null);
    expect(hashes).to.equal(1);
    // the cache is read before the key's form is checked: only well-formed keys are ever in it
    for (const bad of [`${key}x`, key.slice(0, -1), key.replace('gw_live_', 'gw_test_'), `${key.slice(0, -1)}=`, `${key.slice(0, -1)}\u0161`, 'x']) {
      const answer = svc.authenticate(bad);
      expect(answer, bad).to.equal(null); // a plain value, not a promise: nothing was looked up
    }
    expect(hashes).to.equal(1);
    expect(svc.authenticate(key)).to.not.be.an.instanceOf(Promise); // the cached key, at once
  });

  it('the admin credential: itself and nothing else, ASCII or not; an API key beside it is still looked up', async () => {
    const ascii = new KeyService(store.keys, 'secret', 'admin-credential-0123456789', 5_000);
    const admin = { keyId: 0, userId: 0, admin: true };
    expect(ascii.authenticate('admin-credential-0123456789')).to.deep.equal(admin);
    for (const other of ['admin-credential-012345678', 'admin-credential-01234567890', 'admin-credential-012345678X', 'Admin-credential-0123456789',
      'admin-credential-012345678\u00e9', '']) {
      expect(await ascii.authenticate(other), other).to.equal(null);
    }
    const { key } = await ascii.create('dave');
    expect(await ascii.authenticate(key)).to.include({ admin: false });
    // not ASCII: a presented string is refused by its length only when it has more UTF-16 units than the credential bytes
    const wide = new KeyService(store.keys, 'secret', 'clé-\u2615', 5_000);
    expect(wide.authenticate('clé-\u2615')).to.deep.equal(admin);
    for (const other of ['clé-\u2614', 'cle-\u2615', 'clé-', 'clé-\u2615\u2615', 'cl\u00c3\u00a9-\u2615', 'abcdefghi', 'abcdefgh']) {
      expect(await wide.authenticate(other), other).to.equal(null);
    }
  });

  /** The key repository with its lookups counted; with `gate` set, a lookup's answer (read already) is held back until `release`. */
  function gatedKeys() {
    const keys = store.keys;
    const g = {
      lookups: 0,
      fail: false,
      gate: false,
      waiting: [] as Array<() => void>,
      release() { for (const go of g.waiting.splice(0)) go(); },
      repo: Object.assign(Object.create(keys), {
        findByHash: async (h: string) => {
          g.lookups++;
          if (g.fail) throw new Error('database away');
          const rec = await keys.findByHash(h);
          if (g.gate) await new Promise<void>((r) => g.waiting.push(r));
          return rec;
        },
      }) as typeof keys,
    };
    return g;
  }

  /** Runs `body` with `Date.now` (the cache's clock) answering `clock.now`; the real one is put back after. */
  async function withClock(start: number, body: (clock: { now: number }) => Promise<void>) {
    const clock = { now: start };
    const realNow = Date.now;
    Date.now = () => clock.now;
    try {
      await body(clock);
    } finally {
      Date.now = realNow;
    }
  }

  /** Turns of the event loop until `done` (a background lookup landed), at most 50. */
  async function until(done: () => boolean) {
    for (let i = 0; i < 50 && !done(); i++) await new Promise((r) => setImmediate(r));
  }

  it('a key in use is looked up again in the background at half the TTL: its requests never wait, and what they get is never older than the TTL', async () => {
    await withClock(2_000_000, async (clock) => {
      const g = gatedKeys();
      const svc = new KeyService(g.repo, 'secret', undefined, 5_000);
      const other = new KeyService(store.keys, 'secret', undefined, 5_000); // another instance: revokes elsewhere
      const { key, record } = await svc.create('erin');
      const me = { keyId: record.id, userId: record.user_id, admin: false };
      expect(await svc.authenticate(key)).to.deep.equal(me); // the first: looked up on the request's path
      expect(g.lookups).to.equal(1);
      clock.now += 2_500; // half the TTL: not yet
      expect(svc.authenticate(key)).to.deep.equal(me);
      expect(g.lookups).to.equal(1);
      await other.revoke(record.id); // revoked by another instance: this one answers from its cache within the TTL
      clock.now += 1; // past half: answered at once from the cache, and looked up once in the background
      g.gate = true;
      expect(svc.authenticate(key)).to.deep.equal(me);
      expect(svc.authenticate(key)).to.deep.equal(me);
      expect(g.lookups).to.equal(2); // one lookup for both requests
      clock.now += 2_000; // 4,501 ms since the first lookup began: still within the TTL, the lookup still held back
      expect(svc.authenticate(key)).to.deep.equal(me);
      expect(g.lookups).to.equal(2);
      g.gate = false;
      g.release();
      await until(() => svc.authenticate(key) === null);
      // the background lookup read the revocation: refused at once, without a lookup on the path
      expect(svc.authenticate(key)).to.equal(null);
      expect(g.lookups).to.equal(2);
    });
  });

  it('a revocation in this process while a background lookup runs is not undone by that lookup; a failed one leaves the entry to its TTL', async () => {
    await withClock(3_000_000, async (clock) => {
      const g = gatedKeys();
      const svc = new KeyService(g.repo, 'secret', undefined, 5_000);
      const { key, record } = await svc.create('frank');
      expect(await svc.authenticate(key)).to.not.equal(null);
      clock.now += 3_000;
      g.gate = true;
      expect(svc.authenticate(key)).to.not.equal(null); // the background lookup reads the key, and is held back
      await until(() => g.waiting.length === 1);
      expect(g.lookups).to.equal(2);
      expect(await svc.revoke(record.id)).to.equal(true);
      g.gate = false;
      g.release(); // it lands with what it read before the revocation
      await until(() => false);
      const after = svc.authenticate(key);
      expect(after).to.be.an.instanceOf(Promise); // looked up again (the cache was dropped), not the lookup's stale answer
      expect(await after).to.equal(null);
      expect(g.lookups).to.equal(3);
      // a failed background lookup: no unhandled rejection, the entry answers until its TTL, the next request retries
      const { key: k2, record: r2 } = await svc.create('gina');
      const gina = { keyId: r2.id, userId: r2.user_id, admin: false };
      expect(await svc.authenticate(k2)).to.deep.equal(gina);
      const before = g.lookups;
      g.fail = true;
      clock.now += 2_600;
      expect(svc.authenticate(k2)).to.deep.equal(gina);
      expect(g.lookups).to.equal(before + 1);
      await until(() => false);
      clock.now += 100;
      expect(svc.authenticate(k2)).to.deep.equal(gina); // still within the TTL: from the cache, and tried again
      expect(g.lookups).to.equal(before + 2);
      await until(() => false);
      clock.now += 2_400; // past the TTL: the lookup is on the path again, and its failure is the request's
      const failed = svc.authenticate(k2);
      expect(failed).to.be.an.instanceOf(Promise);
      let err: unknown;
      await (failed as Promise<unknown>).catch((e) => { err = e; });
      expect((err as Error)?.message).to.equal('database away');
      g.fail = false;
    });
  });

  it('a revocation in this process is seen at once; one made elsewhere within the TTL', async () => {
    const svc = new KeyService(store.keys, 'secret', undefined, 150);
    const other = new KeyService(store.keys, 'secret', undefined, 150); // another instance on the same database
    const { key, record } = await svc.create('bob');
    expect(await svc.authenticate(key)).to.not.equal(null);
    expect(await other.authenticate(key)).to.not.equal(null);
    await svc.revoke(record.id);
    expect(await svc.authenticate(key)).to.equal(null);
    await new Promise((r) => setTimeout(r, 200));
    expect(await other.authenticate(key)).to.equal(null);
  });
});
