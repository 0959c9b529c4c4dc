import { expect } from 'chai';
import { sql } from 'kysely';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { openStore, storeMigrator, type Store } from '../../src/store/index.js';
import { newHoldId, usdToNano } from '../../src/store/credits.js';
import { configFor, postgresAvailable, spendElsewhere, DIALECTS } from '../support/db.js';

describe('hold ids', () => {
  it('are UUIDv7: unique, in the order they were made (even within one millisecond), timestamped now', () => {
    const before = Date.now();
    const ids = Array.from({ length: 5000 }, newHoldId);
    const after = Date.now();
    for (const id of ids) expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).to.equal(ids.length);
    expect([...ids].sort()).to.deep.equal(ids);
    const ms = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms(ids[0])).to.be.within(before, after + 2);
    // 5,000 ids in a few milliseconds: the 12-bit counter orders them, the clock part only moves forward
    expect(ms(ids[ids.length - 1])).to.be.within(ms(ids[0]), after + 2);
  });

  it('carry 62 random bits: the variant digit takes its four values evenly and no two random parts repeat', () => {
    const ids = Array.from({ length: 8000 }, newHoldId);
    const variants = new Map<string, number>();
    for (const id of ids) variants.set(id[19], (variants.get(id[19]) ?? 0) + 1);
    expect([...variants.keys()].sort()).to.deep.equal(['8', '9', 'a', 'b']);
    // 2,000 expected each; the standard deviation is ~39
    for (const n of variants.values()) expect(n).to.be.within(1700, 2300);
    expect(new Set(ids.map((id) => id.slice(19))).size).to.equal(ids.length);
    // every hex digit turns up in the random part (not a fixed or truncated source)
    expect(new Set(ids.map((id) => id.slice(20)).join('').replace(/-/g, '')).size).to.equal(16);
  });
});

for (const dialect of DIALECTS) {
  describe(`store on ${dialect}`, function () {
    let store: Store;
    let cfg: ReturnType<typeof configFor>;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      store = await openStore((cfg = configFor(dialect)));
    });
    after(async () => { await store?.close(); });

    it('migrates to the latest schema, and again is a no-op', async () => {
      expect(store.dialect).to.equal(dialect);
      expect(await store.ping()).to.equal(true);
    });

    it('keys: insert, find by hash, revoke once', async () => {
      const uid = await store.keys.createUser('alice');
      const hash = 'hash-' + crypto.randomUUID();
      const rec = await store.keys.insert(uid, 'k1', hash, 'gw_live_abcdef');
      expect(rec).to.include({ user_id: uid, name: 'k1', revoked_at: null });
      expect((await store.keys.findByHash(hash))?.id).to.equal(rec.id);
      expect(await store.keys.findByHash('hash-unknown')).to.equal(undefined);
      expect(await store.keys.revoke(rec.id)).to.equal(true);
      expect(await store.keys.revoke(rec.id)).to.equal(false);
      expect((await store.keys.get(rec.id))?.revoked_at).to.be.a('string');
    });

    it('credits: hold, settle and release keep the ledger equal to the balance', async () => {
      const uid = await store.keys.createUser('bob');
      expect(await store.credits.grant(uid, usdToNano(1))).to.equal(1e9);
      expect(await store.credits.hold(uid, 'h1', 300_000_000, 60_000)).to.equal(true);
      expect(await store.credits.balance(uid)).to.equal(700_000_000);
      expect(await store.credits.hold(uid, 'h2', 800_000_000, 60_000)).to.equal(false);
      expect(await store.credits.settle('h1', 120_000_000)).to.equal(120_000_000);
      expect(await store.credits.settle('h1', 120_000_000)).to.equal(0); // second settle is a no-op
      expect(await store.credits.balance(uid)).to.equal(880_000_000);
      expect(await store.credits.hold(uid, 'h3', 100_000_000, 60_000)).to.equal(true);
      expect(await store.credits.release('h3')).to.equal(0);
      expect(await store.credits.balance(uid)).to.equal(880_000_000);
      expect(await store.credits.ledgerSum(uid)).to.equal(880_000_000);
      expect(await store.credits.openHoldCount(uid)).to.equal(0);
    });

    it('credits: likelyCovers trusts the balance this process\'s last hold, settle or grant left, less what is pending', async () => {
      const uid = await store.keys.createUser('erin');
      await store.credits.grant(uid, 1000);
      expect(store.credits.likelyCovers(uid, 1)).to.equal(false); // nothing seen yet
      expect(await store.credits.hold(uid, `e1-${uid}`, 100, 60_000)).to.equal(true); // 900 left
      expect(store.credits.likelyCovers(uid, 450)).to.equal(true); // covered twice over
      expect(store.credits.likelyCovers(uid, 451)).to.equal(false);
      const pending = store.credits.hold(uid, `e2-${uid}`, 300, 60_000); // asked for, not yet committed
      expect(store.credits.likelyCovers(uid, 300)).to.equal(true); // 900 - 300
      expect(store.credits.likelyCovers(uid, 301)).to.equal(false);
      expect(await pending).to.equal(true); // 600 left
      expect(store.credits.likelyCovers(uid, 301)).to.equal(false);
      expect(await store.credits.settle(`e1-${uid}`, 40)).to.equal(40); // 60 back: 660
      expect(store.credits.likelyCovers(uid, 330)).to.equal(true);
      expect(store.credits.likelyCovers(uid, 331)).to.equal(false);
      // spent by another process: unseen until this process's next write for the user
      await spendElsewhere(store, uid, 600); // 60 left
      expect(store.credits.likelyCovers(uid, 330)).to.equal(true);
      expect(await store.credits.hold(uid, `e3-${uid}`, 100, 60_000)).to.equal(false); // the debit is the authority
      expect(store.credits.likelyCovers(uid, 1)).to.equal(false); // and after a refusal nothing is trusted
      expect(await store.credits.release(`e2-${uid}`)).to.equal(0); // 300 back: 360
      expect(store.credits.likelyCovers(uid, 180)).to.equal(true);
      expect(store.credits.likelyCovers(uid, 181)).to.equal(false);
      expect(await store.credits.ledgerSum(uid)).to.equal(await store.credits.balance(uid));
      // this process's own grants and adjustments are seen at once
      expect(await store.credits.grant(uid, 1000)).to.equal(1360);
      expect(store.credits.likelyCovers(uid, 680)).to.equal(true);
      expect(await store.credits.grant(uid, -1300)).to.equal(60);
      expect(store.credits.likelyCovers(uid, 31)).to.equal(false);
    });

    it('credits: a real cost above the hold takes the excess, never below zero', async () => {
      const uid = await store.keys.createUser('carol');
      await store.credits.grant(uid, 1000);
      expect(await store.credits.hold(uid, 'x1', 600, 60_000)).to.equal(true);
      expect(await store.credits.settle('x1', 5000)).to.equal(1000); // only what was there
      expect(await store.credits.balance(uid)).to.equal(0);
      expect(await store.credits.ledgerSum(uid)).to.equal(0);
    });

    it('credits: 100 concurrent holds on one balance never overspend', async () => {
      const uid = await store.keys.createUser('dave');
      await store.credits.grant(uid, 1_000);
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => store.credits.hold(uid, `c${i}-${uid}`, 30, 60_000)));
      expect(results.filter(Boolean)).to.have.length(33);
      expect(await store.credits.balance(uid)).to.equal(10);
      // 990 held: the ledger has only the grant, the balance plus the open holds
      expect(await store.credits.openHoldSum(uid)).to.equal(990);
      expect(await store.credits.ledgerSum(uid)).to.equal(1000);
      await Promise.all(results.map((ok, i) => (ok ? store.credits.settle(`c${i}-${uid}`, 20) : null)));
      expect(await store.credits.balance(uid)).to.equal(1000 - 33 * 20);
      expect(await store.credits.ledgerSum(uid)).to.equal(1000 - 33 * 20);
    });

    it('credits: writes made together (one group commit) keep their order and rules across users; a failing one rejects alone', async () => {
      const a = await store.keys.createUser('group-a');
      const b = await store.keys.createUser('group-b');
      await store.credits.grant(a, 100);
      await store.credits.grant(b, 50);
      const dup = `dup-${a}`;
      // all five in one tick: one batch, applied in this order
      const holds = await Promise.allSettled([
        store.credits.hold(a, dup, 60, 60_000), // a: 100 -> 40
        store.credits.hold(a, `g2-${a}`, 60, 60_000), // refused: 40 left
        store.credits.hold(b, `g3-${b}`, 50, 60_000), // b: 50 -> 0
        store.credits.hold(a, dup, 10, 60_000), // the same id again: refused by the key, and nothing debited
        store.credits.hold(a, `g4-${a}`, 40, 60_000), // a: 40 -> 0
      ]);
      expect(holds.map((h) => h.status)).to.deep.equal(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect(holds.map((h) => (h.status === 'fulfilled' ? h.value : 'error'))).to.deep.equal([true, false, true, 'error', true]);
      expect([await store.credits.balance(a), await store.credits.balance(b)]).to.deep.equal([0, 0]);
      expect([await store.credits.openHoldCount(a), await store.credits.openHoldCount(b)]).to.deep.equal([2, 1]);
      // while holds are open the ledger holds only the grants: it sums to the balance plus the open holds
      expect([await store.credits.ledgerSum(a), await store.credits.ledgerSum(b)]).to.deep.equal([100, 50]);
      expect([await store.credits.openHoldSum(a), await store.credits.openHoldSum(b)]).to.deep.equal([100, 50]);
      const settles = await Promise.all([
        store.credits.settle(dup, 30), // gives 30 back
        store.credits.release(`g4-${a}`), // gives 40 back
        store.credits.settle(`g3-${b}`, 70), // 20 over the hold, and b has nothing left: charged 50
        store.credits.settle(dup, 5), // settled already in this batch: no-op
      ]);
      expect(settles).to.deep.equal([30, 0, 50, 0]);
      expect([await store.credits.balance(a), await store.credits.balance(b)]).to.deep.equal([70, 0]);
      expect([await store.credits.ledgerSum(a), await store.credits.ledgerSum(b)]).to.deep.equal([70, 0]);
      expect([await store.credits.openHoldCount(a), await store.credits.openHoldCount(b)]).to.deep.equal([0, 0]);
      // the ledger in the order the writes were made: one charge per settled request, nothing for a release
      expect((await store.credits.ledger(a)).map((r) => [r.kind, r.delta_nano, r.reference])).to.deep.equal([
        ['grant', 100, null], ['charge', -30, dup]]);
      expect((await store.credits.ledger(b)).map((r) => [r.kind, r.delta_nano, r.reference])).to.deep.equal([
        ['grant', 50, null], ['charge', -50, `g3-${b}`]]);
    });

    it('credits: a settle queued before its hold committed settles that hold (PostgreSQL: in the next batch); a refused hold\'s settle charges nothing', async () => {
      const uid = await store.keys.createUser('same-tick');
      await store.credits.grant(uid, 1000);
      const [h1, h2, h3] = [`tick-1-${uid}`, `tick-2-${uid}`, `tick-3-${uid}`];
      // queued in one tick, in this order: a hold and its settle (under, then over the hold), and a hold the balance cannot cover
      expect(await Promise.all([
        store.credits.hold(uid, h1, 300, 60_000), store.credits.settle(h1, 120),
        store.credits.hold(uid, h2, 200, 60_000), store.credits.settle(h2, 250),
        store.credits.hold(uid, h3, 5000, 60_000), store.credits.settle(h3, 100),
      ])).to.deep.equal([true, 120, true, 250, false, 0]);
      expect(await store.credits.balance(uid)).to.equal(1000 - 120 - 250);
      expect(await store.credits.openHoldCount(uid)).to.equal(0);
      expect((await store.credits.ledger(uid)).map((r) => [r.kind, r.delta_nano, r.reference])).to.deep.equal([
        ['grant', 1000, null], ['charge', -120, h1], ['charge', -250, h2]]);
      expect(await store.credits.ledgerSum(uid)).to.equal(630);
    });

    it('credits: a settle told the hold by the process that made it (the chat engine) keeps every rule: under and over the hold, twice, queued with it, refused, released elsewhere', async () => {
      const uid = await store.keys.createUser('known-hold');
      await store.credits.grant(uid, 1000);
      const id = (n: number) => `known-${n}-${uid}`;
      const known = (n: number, amountNano: number) => ({ id: id(n), userId: uid, amountNano });
      expect(await store.credits.hold(uid, id(1), 300, 60_000)).to.equal(true);
      expect(await store.credits.settle(known(1, 300), 120)).to.equal(120); // 180 back: 880
      expect(await store.credits.settle(known(1, 300), 120)).to.equal(0); // settled: a no-op
      expect(await store.credits.balance(uid)).to.equal(880);
      // queued in one tick: a hold and its settle over the hold (the excess taken), a hold the balance cannot cover
      expect(await Promise.all([
        store.credits.hold(uid, id(2), 200, 60_000), store.credits.settle(known(2, 200), 250),
        store.credits.hold(uid, id(3), 5000, 60_000), store.credits.release(known(3, 5000)),
      ])).to.deep.equal([true, 250, false, 0]);
      expect(await store.credits.balance(uid)).to.equal(630);
      // released by another process (its owner looked dead): the owner's settle then charges nothing
      expect(await store.credits.hold(uid, id(4), 100, 60_000)).to.equal(true);
      expect(await store.credits.release(id(4))).to.equal(0);
      expect(await store.credits.settle(known(4, 100), 100)).to.equal(0);
      // a real cost above what is left takes the balance down to zero, never below
      expect(await store.credits.hold(uid, id(5), 600, 60_000)).to.equal(true);
      expect(await store.credits.settle(known(5, 600), 5000)).to.equal(630);
      expect(await store.credits.balance(uid)).to.equal(0);
      expect(await store.credits.openHoldCount(uid)).to.equal(0);
      expect((await store.credits.ledger(uid)).map((r) => [r.kind, r.delta_nano, r.reference])).to.deep.equal([
        ['grant', 1000, null], ['charge', -120, id(1)], ['charge', -250, id(2)], ['charge', -630, id(5)]]);
      expect(await store.credits.ledgerSum(uid)).to.equal(0);
    });

    it('credits: a hold left open across migration 0007 (made when a hold wrote a ledger row) settles into a consistent ledger', async () => {
      const migrator = storeMigrator(store.db, cfg);
      const uid = await store.keys.createUser('upgrader');
      await store.credits.grant(uid, 1000);
      const h = `upgrade-${uid}`;
      expect(await store.credits.hold(uid, h, 300, 60_000)).to.equal(true);
      // down to 0006: the open hold gets the ledger row the old rule wrote, and the ledger sums to the balance again
      expect((await migrator.migrateTo('0006_open_holds_index')).error).to.equal(undefined);
      expect(await store.credits.ledgerSum(uid)).to.equal(700);
      expect((await store.credits.ledger(uid)).map((r) => [r.kind, r.delta_nano, r.reference])).to.deep.equal([['grant', 1000, null], ['hold', -300, h]]);
      // up again: that debit leaves the ledger while the hold is open
      expect((await migrator.migrateToLatest()).error).to.equal(undefined);
      expect(await store.credits.ledgerSum(uid)).to.equal(1000);
      expect(await store.credits.balance(uid) + await store.credits.openHoldSum(uid)).to.equal(1000);
      // and its settle writes the charge: the ledger equals the balance
      expect(await store.credits.settle(h, 120)).to.equal(120);
      expect(await store.credits.balance(uid)).to.equal(880);
      expect(await store.credits.ledgerSum(uid)).to.equal(880);
      expect((await store.credits.ledger(uid)).map((r) => [r.kind, r.delta_nano])).to.deep.equal([['grant', 1000], ['hold', -300], ['hold_reversal', 300], ['charge', -120]]);
    });

    it('credits: expired holds are released on reconciliation', async () => {
      const uid = await store.keys.createUser('erin');
      await store.credits.grant(uid, 500);
      await store.credits.hold(uid, `exp-${uid}`, 200, -1);
      expect(await store.credits.releaseExpired()).to.be.greaterThanOrEqual(1);
      expect(await store.credits.balance(uid)).to.equal(500);
    });

    it('credits: a settle deletes its hold, so credit_holds keeps the open ones only, with no index but its key (migration 0009, and back)', async () => {
      const uid = await store.keys.createUser('holder');
      await store.credits.grant(uid, 1000);
      const rows = async () => (await store.db.selectFrom('credit_holds').select(['id', 'settled_at']).where('user_id', '=', uid).orderBy('id').execute())
        .map((r) => [r.id, r.settled_at === null ? null : Number(r.settled_at)]);
      const [h1, h2] = [`keep-1-${uid}`, `keep-2-${uid}`];
      expect(await store.credits.hold(uid, h1, 300, 60_000)).to.equal(true);
      expect(await store.credits.hold(uid, h2, 200, 60_000)).to.equal(true);
      expect(await rows()).to.deep.equal([[h1, null], [h2, null]]);
      expect(await store.credits.settle(h1, 120)).to.equal(120);
      expect(await rows()).to.deep.equal([[h2, null]]);
      // settling again finds nothing: a no-op, as before
      expect(await store.credits.settle(h1, 120)).to.equal(0);
      expect(await store.credits.release(h2)).to.equal(0);
      expect(await rows()).to.deep.equal([]);
      expect(await store.credits.balance(uid)).to.equal(880);
      expect((await store.credits.ledger(uid)).map((r) => [r.kind, r.delta_nano, r.reference])).to.deep.equal([['grant', 1000, null], ['charge', -120, h1]]);

      const holdIndexes = async () => (dialect === 'sqlite'
        ? (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'credit_holds' and sql is not null`.execute(store.db)).rows
        : (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'credit_holds' and schemaname = current_schema() and indexname <> 'credit_holds_pkey'`.execute(store.db)).rows)
        .map((r) => r.name);
      expect(await holdIndexes()).to.deep.equal([]);

      // down to 0008: the partial index of the open holds is back; a build of then marks a settled hold settled
      const migrator = storeMigrator(store.db, cfg);
      expect((await migrator.migrateTo('0008_fewer_indexes')).error).to.equal(undefined);
      expect(await holdIndexes()).to.deep.equal(['credit_holds_open']);
      const [old, open] = [`old-settled-${uid}`, `old-open-${uid}`];
      const t = Date.now();
      await store.db.insertInto('credit_holds').values([
        { id: old, user_id: uid, amount_nano: 5, created_at: t, expires_at: t + 60_000, settled_at: t },
        { id: open, user_id: uid, amount_nano: 7, created_at: t, expires_at: t + 60_000, settled_at: null },
      ]).execute();
      // up again: the settled row goes, the open one stays (and still settles)
      expect((await migrator.migrateToLatest()).error).to.equal(undefined);
      expect(await holdIndexes()).to.deep.equal([]);
      expect(await rows()).to.deep.equal([[open, null]]);
      // a process of the older build, still running during the upgrade, marks a hold settled: the expiry sweep deletes it
      await store.db.insertInto('credit_holds').values({ id: old, user_id: uid, amount_nano: 5, created_at: t, expires_at: t + 60_000, settled_at: t }).execute();
      expect(await store.credits.releaseExpired()).to.equal(0);
      expect(await rows()).to.deep.equal([[open, null]]);
      await store.db.deleteFrom('credit_holds').where('id', '=', open).execute();
    });

    it('credits: the ledger keeps its rows, ids and index through migration 0010 (SQLite: rowid ids, no sqlite_sequence), and back', async () => {
      const uid = await store.keys.createUser('ledger-rebuild');
      await store.credits.grant(uid, 500);
      const h = `rowid-${uid}`;
      await store.credits.hold(uid, h, 300, 60_000);
      await store.credits.settle(h, 120);
      const rows = async () => (await store.db.selectFrom('credit_ledger').selectAll().where('user_id', '=', uid).orderBy('id').execute())
        .map((r) => [Number(r.id), r.kind, Number(r.delta_nano), r.reference, r.created_at]);
      const before = await rows();
      expect(before.map((r) => [r[1], r[2], r[3]])).to.deep.equal([['grant', 500, null], ['charge', -120, h]]);
      const ddl = async () => (await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = 'credit_ledger'`.execute(store.db)).rows[0].sql.toLowerCase();
      const ledgerIndexes = async () => (dialect === 'sqlite'
        ? (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'credit_ledger' and sql is not null`.execute(store.db)).rows
        : (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'credit_ledger' and schemaname = current_schema() and indexname <> 'credit_ledger_pkey'`.execute(store.db)).rows)
        .map((r) => r.name);
      if (dialect === 'sqlite') expect(await ddl()).to.contain('integer primary key').and.not.to.contain('autoincrement');
      expect(await ledgerIndexes()).to.deep.equal(['credit_ledger_user']);

      const migrator = storeMigrator(store.db, cfg);
      expect((await migrator.migrateTo('0009_settled_holds_deleted')).error).to.equal(undefined);
      if (dialect === 'sqlite') expect(await ddl()).to.contain('autoincrement');
      expect(await rows()).to.deep.equal(before);
      expect(await ledgerIndexes()).to.deep.equal(['credit_ledger_user']);
      await store.credits.grant(uid, 7); // made under the old table: its id follows the largest
      expect((await migrator.migrateToLatest()).error).to.equal(undefined);
      const after = await rows();
      expect(after.slice(0, 2)).to.deep.equal(before);
      expect(after[2][0]).to.be.greaterThan(before[1][0] as number);
      // new rows go on after the largest id
      await store.credits.grant(uid, 1);
      const last = await rows();
      expect(last[3][0]).to.be.greaterThan(after[2][0] as number);
      expect(await store.credits.ledgerSum(uid)).to.equal(500 - 120 + 7 + 1);
      expect(await store.credits.balance(uid)).to.equal(500 - 120 + 7 + 1);
      if (dialect === 'sqlite') {
        expect(await ddl()).not.to.contain('autoincrement');
        const plan = await sql<{ detail: string }>`explain query plan select id from credit_ledger where user_id = ${uid} order by id`.execute(store.db);
        expect(plan.rows.map((r) => r.detail).join(' ')).to.contain('COVERING INDEX credit_ledger_user');
      }
    });

    it('credits: credit_holds is one B-tree on SQLite (migration 0012, WITHOUT ROWID): a hold commits 2 WAL pages and its settle 4, one each fewer; open holds survive, and back', async () => {
      const uid = await store.keys.createUser('one-btree');
      await store.credits.grant(uid, 1000);
      const open = `open-${uid}`;
      expect(await store.credits.hold(uid, open, 100, 60_000)).to.equal(true);
      const ddl = async () => (await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = 'credit_holds'`.execute(store.db)).rows[0].sql.toLowerCase();
      // The WAL pages one write's commit adds: the WAL emptied first (no reader holds it here), then its growth in frames.
      const pagesOf = async (write: () => Promise<unknown>) => {
        // (the checkpoint worker may be copying at that moment: then again)
        for (let i = 0; (await sql<{ busy: number }>`pragma wal_checkpoint(TRUNCATE)`.execute(store.db)).rows[0].busy !== 0; i++) {
          expect(i).to.be.below(50);
          await new Promise((r) => setTimeout(r, 20));
        }
        const [{ page_size: pageSize }] = (await sql<{ page_size: number }>`pragma page_size`.execute(store.db)).rows;
        await write();
        return (fs.statSync(`${(cfg as { file: string }).file}-wal`).size - 32) / (24 + pageSize);
      };
      const holdAndSettle = async (tag: string) => {
        const id = `${tag}-${uid}`;
        return [await pagesOf(() => store.credits.hold(uid, id, 50, 60_000)), await pagesOf(() => store.credits.settle(id, 20))];
      };
      if (dialect === 'sqlite') {
        expect(await ddl()).to.match(/\)\s*without rowid$/);
        // the hold: its balance row and its credit_holds row; the settle: the hold, the balance, the ledger row and its index
        expect(await holdAndSettle('one')).to.deep.equal([2, 4]);
      }
      const migrator = storeMigrator(store.db, cfg);
      expect((await migrator.migrateTo('0011_pg_credit_batch')).error).to.equal(undefined);
      if (dialect === 'sqlite') {
        expect(await ddl()).not.to.contain('without rowid');
        // a rowid table with a text key is two B-trees (the rows and the key's index): a page more each
        expect(await holdAndSettle('two')).to.deep.equal([3, 5]);
      }
      expect((await migrator.migrateToLatest()).error).to.equal(undefined);
      // the hold made before both rebuilds is still open, and settles
      expect(await store.credits.openHoldCount(uid)).to.equal(1);
      expect(await store.credits.settle(open, 40)).to.equal(40);
      expect(await store.credits.openHoldCount(uid)).to.equal(0);
      const charged = dialect === 'sqlite' ? 40 + 20 + 20 : 40;
      expect(await store.credits.balance(uid)).to.equal(1000 - charged);
      expect(await store.credits.ledgerSum(uid)).to.equal(1000 - charged);
    });

    it('usage_records: four secondary indexes, each read served by one; health history one (migration 0008, and back)', async () => {
      const indexesOf = async (table: string) => (dialect === 'sqlite'
        ? (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = ${table} and sql is not null`.execute(store.db)).rows
        : (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = ${table} and schemaname = current_schema() and indexname <> ${`${table}_pkey`}`.execute(store.db)).rows)
        .map((r) => r.name).sort();
      const indexes = () => indexesOf('usage_records');
      expect(await indexesOf('model_health_history')).to.deep.equal(['model_health_history_gm_ts_id']);
      const latest = ['usage_records_created_at', 'usage_records_gateway_created_status_latency', 'usage_records_model_created_gateway_user',
        'usage_records_provider_created_status_latency'];
      expect(await indexes()).to.deep.equal(latest);
      if (dialect === 'sqlite') {
        const plan = async (q: ReturnType<typeof sql>) => (await sql<{ detail: string }>`explain query plan ${q}`.execute(store.db)).rows.map((r) => r.detail).join(' | ');
        // the latency sample of one scope, latest first: covered, in index order (no sort step)
        for (const scope of ['gateway', 'provider']) {
          const p = await plan(sql`select latency_ms from usage_records where ${sql.ref(scope)} = 'x' and status = 'success' and created_at >= 1 and created_at < 2 order by created_at desc limit 10`);
          expect(p).to.contain(`USING COVERING INDEX usage_records_${scope}_created_status_latency (${scope}=? AND created_at>? AND created_at<?)`);
          expect(p).not.to.contain('TEMP B-TREE');
          // a window's raw edge rows of one scope
          expect(await plan(sql`select prompt_tokens from usage_records where ${sql.ref(scope)} = 'x' and created_at >= 1 and created_at < 2`))
            .to.contain(`USING INDEX usage_records_${scope}_created_status_latency (${scope}=? AND created_at>? AND created_at<?)`);
        }
        // distinct users of listed models in a window, with and without a gateway: covered
        for (const gw of [sql``, sql`and gateway || '' = 'g'`]) { // as the statistics write it (src/stats/service.ts)
          expect(await plan(sql`select model, count(distinct user_id) from usage_records where model in ('a', 'b') and created_at >= 1 and created_at < 2 ${gw} group by model`))
            .to.contain('USING COVERING INDEX usage_records_model_created_gateway_user (model=? AND created_at>? AND created_at<?)');
        }
        expect(await plan(sql`select prompt_tokens from usage_records where created_at >= 1 and created_at < 2`)).to.contain('USING INDEX usage_records_created_at');
      }
      // down to 0007 gives back its eight indexes, and up again the four
      const migrator = storeMigrator(store.db, cfg);
      expect((await migrator.migrateTo('0007_ledger_charges')).error).to.equal(undefined);
      expect(await indexes()).to.deep.equal(['usage_records_created_at', 'usage_records_gateway_created_at', 'usage_records_gateway_status_created_latency',
        'usage_records_model_created_user', 'usage_records_model_gateway_created_user', 'usage_records_provider_created_at',
        'usage_records_provider_status_created_latency', 'usage_records_user_id_created_at']);
      expect(await indexesOf('model_health_history')).to.deep.equal(['model_health_history_gm_ts_id', 'model_health_history_ts']);
      expect((await migrator.migrateToLatest()).error).to.equal(undefined);
      expect(await indexes()).to.deep.equal(latest);
      expect(await indexesOf('model_health_history')).to.deep.equal(['model_health_history_gm_ts_id']);
    });

    it('sessions: scoped to their owner, messages kept in order, delete cascades', async () => {
      const a = await store.keys.createUser('a');
      const b = await store.keys.createUser('b');
      const s = await store.sessions.create(a, 'First', 'gpt-4o-mini');
      await store.sessions.addMessages(s.id, [
        { role: 'user', content: 'hi', model: 'gpt-4o-mini', tokens: 3 },
        { role: 'assistant', content: 'hello', model: 'gpt-4o-mini', tokens: 5 },
      ]);
      const got = await store.sessions.get(a, s.id);
      expect(got?.messages?.map((m) => [m.role, m.content, m.tokens])).to.deep.equal([['user', 'hi', 3], ['assistant', 'hello', 5]]);
      expect(await store.sessions.get(b, s.id)).to.equal(undefined);
      expect(await store.sessions.update(b, s.id, { title: 'x' })).to.equal(undefined);
      expect((await store.sessions.update(a, s.id, { title: 'Renamed' }))?.title).to.equal('Renamed');
      expect((await store.sessions.list(a, 10, 0)).total).to.equal(1);
      expect(await store.sessions.delete(b, s.id)).to.equal(false);
      expect(await store.sessions.delete(a, s.id)).to.equal(true);
      expect(await store.sessions.messages(s.id)).to.deep.equal([]);
    });

    it('usage and health: a flush of 150 records stores each once with its own values (SQLite: in multi-row INSERTs)', async () => {
      const rid = crypto.randomUUID();
      const at = Date.now();
      const before = await store.usage.count();
      const records = Array.from({ length: 150 }, (_, i) => ({ request_id: `${rid}-${i}`, user_id: null, key_id: null, endpoint: 'chat',
        gateway: 'g150', provider: 'p', model: `m${i % 3}`, status: i % 5 ? 'success' : 'error', error_class: null, http_status: 200,
        prompt_tokens: i, completion_tokens: 2 * i, cached_tokens: 0, cost_nano: 1000 + i, latency_ms: 10 + i, ttft_ms: i % 4 ? 3 : null, created_at: at + i }));
      await store.usage.insertMany(records);
      expect(await store.usage.count()).to.equal(before + 150);
      for (const i of [0, 1, 63, 64, 127, 128, 143, 144, 147, 148, 149]) {
        const [row] = await store.usage.byRequestId(`${rid}-${i}`);
        expect([row.model, row.status, Number(row.prompt_tokens), Number(row.cost_nano), row.ttft_ms === null ? null : Number(row.ttft_ms), Number(row.created_at)], `record ${i}`)
          .to.deep.equal([`m${i % 3}`, i % 5 ? 'success' : 'error', i, 1000 + i, i % 4 ? 3 : null, at + i]);
      }
      const now = Date.now();
      await store.health.record(Array.from({ length: 150 }, (_, i) => ({ gateway: 'g150', model: 'm', provider: 'p', ok: i % 2 === 0,
        status: i % 2 ? 'error' : 'success', latencyMs: i, error: null, ts: now + i, source: 'passive' as const })));
      const history = await store.db.selectFrom('model_health_history').select(['ts', 'ok', 'latency_ms'])
        .where('gateway', '=', 'g150').orderBy('ts').execute();
      expect(history.map((r) => [Number(r.ts) - now, Number(r.ok), Number(r.latency_ms)]))
        .to.deep.equal(Array.from({ length: 150 }, (_, i) => [i, i % 2 === 0 ? 1 : 0, i]));
    });

    it('usage and health: batched writes are stored exactly', async () => {
      const rid = crypto.randomUUID();
      const at = Date.now();
      // a value of its own in every column: a column written in another's place shows
      const written = { request_id: rid, user_id: 1, key_id: 2, endpoint: 'chat', gateway: 'g', provider: 'p', model: 'm',
        status: 'error', error_class: 'upstream_error', http_status: 502, prompt_tokens: 10, completion_tokens: 5, cached_tokens: 3,
        cost_nano: 1234, latency_ms: 42, ttft_ms: 7, created_at: at };
      await store.usage.insertMany([written, { ...written, request_id: `${rid}-2`, error_class: null, ttft_ms: null }]);
      const rows = await store.usage.byRequestId(rid);
      expect(rows).to.have.length(1);
      const { id: _id, ...stored } = rows[0];
      const asNumbers = (r: Record<string, unknown>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v]));
      expect(asNumbers(stored)).to.deep.equal(written);
      const [second] = await store.usage.byRequestId(`${rid}-2`);
      expect([second.error_class, second.ttft_ms, second.request_id]).to.deep.equal([null, null, `${rid}-2`]);
      const now = Date.now();
      await store.health.record([
        { gateway: 'g', model: 'm', provider: 'p', ok: true, status: 'success', latencyMs: 100, error: null, ts: now, source: 'passive' },
        { gateway: 'g', model: 'm', provider: 'p', ok: false, status: 'error', latencyMs: 300, error: 'boom', ts: now + 1, source: 'passive' },
      ]);
      const h = await store.health.get('g', 'm');
      expect(h).to.include({ last_status: 'error', last_error: 'boom' });
      expect([Number(h!.calls), Number(h!.successes), Number(h!.errors), Number(h!.total_latency_ms), Number(h!.consecutive_failures)])
        .to.deep.equal([2, 1, 1, 400, 1]);
      // later batches update the counters (the upsert's rules): successes only keep the last error and end the run of
      // failures; failures only keep the last success and add to the run
      const counters = async () => {
        const r = (await store.health.get('g', 'm'))!;
        return [r.last_status, r.last_error, Number(r.calls), Number(r.consecutive_failures), Number(r.last_success), Number(r.last_failure), Number(r.last_checked)];
      };
      await store.health.record([
        { gateway: 'g', model: 'm', provider: 'p', ok: true, status: 'success', latencyMs: 50, error: null, ts: now + 2, source: 'passive' },
        { gateway: 'g', model: 'm', provider: 'p', ok: true, status: 'success', latencyMs: 60, error: null, ts: now + 3, source: 'probe' },
      ]);
      expect(await counters()).to.deep.equal(['success', 'boom', 4, 0, now + 3, now + 1, now + 3]);
      await store.health.record([
        { gateway: 'g', model: 'm', provider: 'p', ok: false, status: 'timeout', latencyMs: null, error: 'slow', ts: now + 4, source: 'passive' },
        { gateway: 'g', model: 'm', provider: 'p', ok: false, status: 'error', latencyMs: 10, error: 'bad', ts: now + 5, source: 'passive' },
      ]);
      expect(await counters()).to.deep.equal(['error', 'bad', 6, 2, now + 3, now + 5, now + 5]);
      const history = await store.db.selectFrom('model_health_history').select(['ts', 'ok', 'status', 'latency_ms', 'source'])
        .where('gateway', '=', 'g').where('model', '=', 'm').orderBy('ts').execute();
      expect(history.map((r) => [Number(r.ts) - now, Number(r.ok), r.status, r.latency_ms === null ? null : Number(r.latency_ms), r.source])).to.deep.equal([
        [0, 1, 'success', 100, 'passive'], [1, 0, 'error', 300, 'passive'], [2, 1, 'success', 50, 'passive'], [3, 1, 'success', 60, 'probe'],
        [4, 0, 'timeout', null, 'passive'], [5, 0, 'error', 10, 'passive']]);
      const buckets = await store.db.selectFrom('model_health_buckets').select(['calls', 'successes', 'latency_sum', 'latency_n'])
        .where('gateway', '=', 'g').where('model', '=', 'm').execute();
      const sum = (k: 'calls' | 'successes' | 'latency_sum' | 'latency_n') => buckets.reduce((a, b) => a + Number(b[k]), 0);
      expect([sum('calls'), sum('successes'), sum('latency_sum'), sum('latency_n')]).to.deep.equal([6, 3, 520, 5]);
    });
  });
}
