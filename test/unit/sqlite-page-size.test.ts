import { expect } from 'chai';
import SQLite from 'better-sqlite3';
import { openStore, SQLITE_PAGE_SIZE } from '../../src/store/index.js';
import { sqliteConfig } from '../support/db.js';

/**
 * The embedded database's page size (src/store/index.ts): a database the store creates gets 2 KiB pages, so each
 * commit writes half the bytes to the WAL (and the checkpoints copy half); a database created before keeps the page
 * size it has, since a WAL database's page size cannot change in place.
 */
describe('SQLite page size', () => {
  const pageSize = (file: string): number => {
    const raw = new SQLite(file, { readonly: true });
    try {
      return raw.pragma('page_size', { simple: true }) as number;
    } finally {
      raw.close();
    }
  };

  it('a database the store creates has 2 KiB pages, and holds what was written', async () => {
    expect(SQLITE_PAGE_SIZE).to.equal(2048);
    const cfg = sqliteConfig() as { dialect: 'sqlite'; file: string };
    const store = await openStore(cfg);
    const uid = await store.keys.createUser('page-size-user');
    await store.credits.grant(uid, 1000);
    expect(await store.credits.hold(uid, 'page-size-hold', 300, 60_000)).to.equal(true);
    expect(await store.credits.settle('page-size-hold', 120)).to.equal(120);
    await store.close();
    expect(pageSize(cfg.file)).to.equal(2048);
    const again = await openStore(cfg);
    try {
      expect(await again.credits.balance(uid)).to.equal(880);
      expect(await again.credits.ledgerSum(uid)).to.equal(880);
    } finally {
      await again.close();
    }
  });

  it('a database created with 4 KiB pages (before the change) keeps them and is migrated and used as before', async () => {
    const cfg = sqliteConfig() as { dialect: 'sqlite'; file: string };
    const old = new SQLite(cfg.file);
    old.pragma('page_size = 4096');
    old.pragma('journal_mode = WAL');
    old.exec('create table leftover (id integer primary key)');
    old.close();
    const store = await openStore(cfg);
    try {
      const uid = await store.keys.createUser('old-file-user');
      await store.credits.grant(uid, 500);
      expect(await store.credits.hold(uid, 'old-file-hold', 200, 60_000)).to.equal(true);
      expect(await store.credits.settle('old-file-hold', 50)).to.equal(50);
      expect(await store.credits.balance(uid)).to.equal(450);
    } finally {
      await store.close();
    }
    expect(pageSize(cfg.file)).to.equal(4096);
  });
});
