/**
 * The PostgreSQL credit group commit: a batch of holds and settles made together is one statement to the server
 * (gw_credit_batch, migration 0011), with the rules of the one-statement forms; a batch that fails runs write by
 * write. The pool is the real one, counted: a function that broke would still give the right answers through the
 * write-by-write fallback, so the count of statements is what shows the batch ran.
 */
import { expect } from 'chai';
import pg from 'pg';
import { sql } from 'kysely';
import { openStore, storeMigrator, type Store } from '../../src/store/index.js';
import { PgCredits } from '../../src/store/pg-credits.js';
import { postgresAvailable, postgresConfig, PG_URL } from '../support/db.js';

/** A pool on `schema` whose connections note every statement they are sent (pool.query or a checked-out client). */
function countedPool(schema: string, sink: () => string[]): pg.Pool {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4, options: `-c search_path=${schema}` });
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    (client as unknown as { query: unknown }).query = (q: string | { text: string }, ...rest: unknown[]) => {
      sink().push(typeof q === 'string' ? q : q.text);
      return query(q, ...rest);
    };
  });
  return pool;
}

describe('unit: PostgreSQL credit batches', function () {
  let store: Store;
  let cfg: ReturnType<typeof postgresConfig>;
  let schema: string;
  let pool: pg.Pool;
  let texts: string[];
  let credits: PgCredits;
  let seen: Array<[number, number]>;

  before(async function () {
    if (!(await postgresAvailable())) return this.skip();
    store = await openStore((cfg = postgresConfig()));
    schema = (cfg as { schema: string }).schema;
    pool = countedPool(schema, () => texts);
  });
  after(async () => {
    await pool?.end();
    await store?.close();
  });
  beforeEach(function () {
    if (!store) return this.skip();
    texts = [];
    credits = new PgCredits(pool);
    seen = [];
    credits.onBalance = (userId, balance) => seen.push([userId, balance]);
  });

  const hold = (user: number, id: string, amount: number) => credits.hold(user, id, amount, 60_000, 'inst-1');

  it('writes made in one tick are one statement, applied in queue order across users', async () => {
    const a = await store.keys.createUser('batch-a');
    const b = await store.keys.createUser('batch-b');
    await store.credits.grant(a, 100);
    await store.credits.grant(b, 50);
    const holds = await Promise.all([
      hold(a, `h1-${a}`, 60), // a: 100 -> 40
      hold(a, `h2-${a}`, 60), // refused: 40 left
      hold(b, `h3-${b}`, 50), // b: 50 -> 0
      hold(a, `h4-${a}`, 40), // a: 40 -> 0
      hold(b, `h5-${b}`, 1), // refused: b has nothing left
    ]);
    expect(holds).to.deep.equal([true, false, true, true, false]);
    expect(texts, 'one statement: the batch function, no transaction of several').to.have.length(1);
    expect(texts[0]).to.include('gw_credit_batch(');
    expect(seen.sort((x, y) => x[0] - y[0]), 'the balances the batch left').to.deep.equal([[a, 0], [b, 0]].sort((x, y) => x[0] - y[0]));
    expect([await store.credits.balance(a), await store.credits.balance(b)]).to.deep.equal([0, 0]);
    const rows = await sql<{ id: string; user_id: number; amount_nano: number; expires_at: number; created_at: number; instance_id: string }>`
      select id, user_id, amount_nano, created_at, expires_at, instance_id from credit_holds where user_id in (${a}, ${b}) order by id`.execute(store.db);
    expect(rows.rows.map((r) => [r.id, r.user_id, r.amount_nano, r.instance_id, r.expires_at - r.created_at]))
      .to.deep.equal([[`h1-${a}`, a, 60, 'inst-1', 60_000], [`h3-${b}`, b, 50, 'inst-1', 60_000], [`h4-${a}`, a, 40, 'inst-1', 60_000]]);

    texts.length = 0;
    seen.length = 0;
    const settles = await Promise.all([
      credits.settle(`h1-${a}`, 30), // gives 30 back
      credits.settle(`h4-${a}`, 0), // a release: gives 40 back, no ledger row
      credits.settle(`h3-${b}`, 70), // 20 over the hold, and b has nothing left: charged 50
      credits.settle(`h1-${a}`, 5), // settled already in this batch: no-op
      credits.settle(`unknown-${a}`, 5), // no such hold: no-op
    ]);
    expect(settles).to.deep.equal([30, 0, 50, 0, 0]);
    expect(texts).to.have.length(1);
    expect(seen.sort((x, y) => x[0] - y[0])).to.deep.equal([[a, 70], [b, 0]].sort((x, y) => x[0] - y[0]));
    expect([await store.credits.balance(a), await store.credits.balance(b)]).to.deep.equal([70, 0]);
    expect([await store.credits.openHoldCount(a), await store.credits.openHoldCount(b)]).to.deep.equal([0, 0]);
    expect([await store.credits.ledgerSum(a), await store.credits.ledgerSum(b)]).to.deep.equal([70, 0]);
    expect((await store.credits.ledger(a)).map((r) => [r.kind, r.delta_nano, r.reference])).to.deep.equal([['grant', 100, null], ['charge', -30, `h1-${a}`]]);
    expect((await store.credits.ledger(b)).map((r) => [r.kind, r.delta_nano, r.reference])).to.deep.equal([['grant', 50, null], ['charge', -50, `h3-${b}`]]);
  });

  it('a batch that fails (a duplicate hold id) is rolled back whole and runs write by write: only the duplicate fails', async () => {
    const a = await store.keys.createUser('batch-dup');
    await store.credits.grant(a, 100);
    const results = await Promise.allSettled([
      hold(a, `d1-${a}`, 30),
      hold(a, `d1-${a}`, 10), // the same id again
      hold(a, `d2-${a}`, 30),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect(texts.filter((t) => t.includes('gw_credit_batch('))).to.have.length(1);
    expect(texts, 'the batch, then each write as its own statement').to.have.length(4);
    // nothing of the failed batch stayed: each hold debited once
    expect(await store.credits.balance(a)).to.equal(40);
    expect(await store.credits.openHoldSum(a)).to.equal(60);
    expect(await store.credits.ledgerSum(a)).to.equal(100);
  });

  it('a user without a balance row is refused, and the others in the batch are not', async () => {
    const a = await store.keys.createUser('batch-funded');
    await store.credits.grant(a, 10);
    const none = await store.keys.createUser('batch-unfunded'); // never granted: no balance row
    expect(await Promise.all([hold(none, `n1-${none}`, 1), hold(a, `n2-${a}`, 10)])).to.deep.equal([false, true]);
    expect(texts).to.have.length(1);
    expect(await store.credits.balance(a)).to.equal(0);
  });

  it('a hold without an instance (none bound yet) is stored with a null instance_id, beside one with an instance', async () => {
    const a = await store.keys.createUser('batch-instance');
    await store.credits.grant(a, 10);
    expect(await Promise.all([credits.hold(a, `i1-${a}`, 1, 60_000, null), hold(a, `i2-${a}`, 1)])).to.deep.equal([true, true]);
    expect(texts).to.have.length(1);
    const rows = await sql<{ id: string; instance_id: string | null }>`select id, instance_id from credit_holds where user_id = ${a} order by id`.execute(store.db);
    expect(rows.rows).to.deep.equal([{ id: `i1-${a}`, instance_id: null }, { id: `i2-${a}`, instance_id: 'inst-1' }]);
  });

  it('two instances\' batches on the same balances, made at once, both commit whole: no deadlock, no overspend', async () => {
    const users: number[] = [];
    for (let u = 0; u < 4; u++) {
      const id = await store.keys.createUser(`two-${u}`);
      await store.credits.grant(id, 1_000);
      users.push(id);
    }
    // a second instance: its own pool and its own batches, as another process has
    const texts2: string[] = [];
    const pool2 = countedPool(schema, () => texts2);
    const other = new PgCredits(pool2);
    try {
      // each instance: 100 holds of 7 over the four users, in opposite user orders, in one tick each
      const ops = (c: PgCredits, tag: string, order: number[]) => Array.from({ length: 100 }, (_, i) =>
        c.hold(users[order[i % 4]], `${tag}-${i}-${users[0]}`, 7, 60_000, tag).then((ok) => ({ ok, id: `${tag}-${i}-${users[0]}`, user: users[order[i % 4]] })));
      const held = await Promise.all([...ops(credits, 'a', [0, 1, 2, 3]), ...ops(other, 'b', [3, 2, 1, 0])]);
      expect(held.every((h) => h.ok), '4 × 1,000 covers 200 holds of 7').to.equal(true);
      // and settled at once, on both instances, each charging 5 of the 7 held
      const settled = await Promise.all(held.map((h) => (h.id.startsWith('a') ? credits : other).settle(h.id, 5)));
      expect(settled.every((c) => c === 5)).to.equal(true);
      expect(texts, 'one batch of holds and one of settles on this instance: none fell back to single writes').to.have.length(2);
      expect(texts2, 'the same on the other').to.have.length(2);
      for (const u of users) {
        expect(await store.credits.balance(u)).to.equal(1_000 - 50 * 5);
        expect(await store.credits.ledgerSum(u)).to.equal(1_000 - 50 * 5);
        expect(await store.credits.openHoldCount(u)).to.equal(0);
      }
    } finally {
      await pool2.end();
    }
  });

  it('migration 0011 is PostgreSQL\'s alone, and its down removes the function', async () => {
    const fn = async () => Number((await sql<{ n: number }>`select count(*)::int as n from pg_proc p join pg_namespace s on s.oid = p.pronamespace
      where p.proname = 'gw_credit_batch' and s.nspname = ${schema}`.execute(store.db)).rows[0].n);
    expect(await fn()).to.equal(1);
    const migrator = storeMigrator(store.db, cfg);
    const down = await migrator.migrateTo('0010_ledger_rowid');
    expect(down.error).to.equal(undefined);
    expect(down.results?.map((r) => r.migrationName)).to.deep.equal(['0012_holds_without_rowid', '0011_pg_credit_batch']);
    expect(await fn()).to.equal(0);
    expect((await migrator.migrateToLatest()).error).to.equal(undefined);
    expect(await fn()).to.equal(1);
  });
});
