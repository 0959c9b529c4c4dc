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
