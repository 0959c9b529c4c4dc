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
