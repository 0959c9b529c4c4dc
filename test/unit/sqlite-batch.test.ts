import { expect } from 'chai';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { SqliteWriteBatch } from '../../src/store/sqlite-batch.js';
import { RowsInsert } from '../../src/store/rollups.js';
import type { WalCheckpointer } from '../../src/store/wal-checkpointer.js';
import { openStore, type Store } from '../../src/store/index.js';
import { sqliteConfig } from '../support/db.js';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The SQLite group commit (src/store/sqlite-batch.ts). The store keeps its batch inside its repositories, so the
 * batch is built here the way src/store/index.ts builds it (one better-sqlite3 connection in WAL mode, Kysely over
 * the same connection) on a temp file, with a throwaway table. A second, read-only connection to the same file
 * sees only committed data: that is how "committed", "not yet committed" and "one transaction" are observed.
 */
describe('SqliteWriteBatch (group commit)', () => {
  let raw: SQLite.Database;
  let db: Kysely<any>;
  let batch: SqliteWriteBatch;
  let observer: SQLite.Database;
  let file: string;

  beforeEach(async () => {
    file = (sqliteConfig() as { file: string }).file;
    raw = new SQLite(file);
    raw.pragma('journal_mode = WAL');
    raw.pragma('busy_timeout = 5000');
    raw.exec('create table t (id integer primary key autoincrement, name text not null unique)');
    db = new Kysely<any>({ dialect: new SqliteDialect({ database: raw }) });
    batch = new SqliteWriteBatch(raw, db);
    observer = new SQLite(file, { readonly: true });
  });
  afterEach(async () => {
    for (const b of made.splice(0)) await b.close();
    await batch.close();
    observer.close();
    if (raw.open) await db.destroy();
  });

  const insert = (name: string) => batch.statement('insert into t (name) values (?)').run(name);
  /** Names in the table as this connection sees them (committed rows for `observer`, plus its own for `raw`). */
  const names = (conn: SQLite.Database = observer) => (conn.prepare('select name from t order by id').all() as Array<{ name: string }>).map((r) => r.name);

  it('prepares each SQL text once', () => {
    const a = batch.statement('select count(*) as n from t');
    expect(batch.statement('select count(*) as n from t')).to.equal(a);
    expect(batch.statement('select 1')).to.not.equal(a);
  });

  it('writes queued in one tick run later, in order, in ONE transaction, and each promise gets its own result', async () => {
    const seen: Array<{ op: string; own: string[]; committed: string[]; inTx: boolean }> = [];
    const look = (op: string) => seen.push({ op, own: names(raw), committed: names(), inTx: raw.inTransaction });
    const p1 = batch.run(() => { insert('a'); look('1'); return 'one'; });
    const p2 = batch.run(() => { insert('b'); look('2'); return 'two'; });
    const p3 = batch.run(() => { look('3'); return (raw.prepare('select count(*) as n from t').get() as { n: number }).n; });
    // nothing ran yet: the batch runs on the next turn of the event loop
    expect(seen).to.deep.equal([]);
    expect(names(raw)).to.deep.equal([]);

    expect(await Promise.all([p1, p2, p3])).to.deep.equal(['one', 'two', 2]);
    expect(seen).to.deep.equal([
      // each op sees the rows of the ops before it (same connection) ...
      { op: '1', own: ['a'], committed: [], inTx: true },
      { op: '2', own: ['a', 'b'], committed: [], inTx: true },
      // ... while none of them is committed before the last op ran: one transaction for all three
      { op: '3', own: ['a', 'b'], committed: [], inTx: true },
    ]);
    expect(names()).to.deep.equal(['a', 'b']);
    expect(raw.inTransaction).to.equal(false);
  });

  it('runs after what the same turn queued with setImmediate after it (undici writes a request on a reused socket from one)', async () => {
    const order: string[] = [];
    const write = batch.run(() => { order.push('commit'); insert('hold'); });
    // queued after the write, in the same turn: as undici does between request() and writing the request
    setImmediate(() => order.push(`immediate (committed: ${names().length})`));
    process.nextTick(() => order.push('tick'));
    await write;
    expect(order).to.deep.equal(['tick', 'immediate (committed: 0)', 'commit']);
    expect(names()).to.deep.equal(['hold']);
  });

  it('each write is committed when its promise resolves; writes of a later tick are a new transaction', async () => {
    await batch.run(() => insert('first'));
    expect(names()).to.deep.equal(['first']);
    const committedBefore = await batch.run(() => { insert('second'); return names(); });
    expect(committedBefore).to.deep.equal(['first']);
    expect(names()).to.deep.equal(['first', 'second']);
  });

  it('a throwing write rejects alone: its neighbours are committed exactly once, its own partial write is not', async () => {
    const runs = { ok1: 0, bad: 0, ok2: 0, dup: 0 };
    const ok1 = batch.run(() => { runs.ok1++; insert('x'); return 'x done'; });
    const bad = batch.run(() => { runs.bad++; insert('y'); throw new Error('boom'); });
    const ok2 = batch.run(() => { runs.ok2++; insert('z'); return names(raw); });
    const dup = batch.run(() => { runs.dup++; insert('x'); }); // UNIQUE violation against ok1's row
    const [r1, rb, r2, rd] = await Promise.allSettled([ok1, bad, ok2, dup]);
    expect(r1).to.deep.equal({ status: 'fulfilled', value: 'x done' });
    expect(rb.status).to.equal('rejected');
    expect((rb as PromiseRejectedResult).reason.message).to.equal('boom');
    // re-run alone after the rollback: it sees ok1's committed row and not the failed op's
    expect(r2).to.deep.equal({ status: 'fulfilled', value: ['x', 'z'] });
    expect(rd.status).to.equal('rejected');
    expect((rd as PromiseRejectedResult).reason.code).to.equal('SQLITE_CONSTRAINT_UNIQUE');
    expect(names()).to.deep.equal(['x', 'z']);
    // the batch was rolled back as a whole at the first throw (the ops after it had not run yet), then every op
    // ran on its own: an op can run twice, so run functions must have no side effects outside the database
    expect(runs).to.deep.equal({ ok1: 2, bad: 2, ok2: 1, dup: 1 });
    // and the batch keeps working
    expect(await batch.run(() => { insert('after'); return 'ok'; })).to.equal('ok');
    expect(names()).to.deep.equal(['x', 'z', 'after']);
  });

  it('a write queued while a Kysely transaction is open runs after it, never inside it (rolled back: the write survives)', async () => {
    const events: string[] = [];
    let queued!: Promise<string[]>;
    let late!: Promise<string[]>;
    const rolledBack = db.transaction().execute(async (trx) => {
      await sql`insert into t (name) values ('in-trx')`.execute(trx);
      queued = batch.run(() => { events.push('batch op 1'); insert('from-batch'); return names(raw); });
      await sleep(20); // the batch's turn came and went: it is waiting for the connection
      // queued while the batch waits for the connection: joins the same batch
      late = batch.run(() => { events.push('batch op 2'); insert('late'); return names(); });
      await sleep(20);
      events.push('trx ends');
      throw new Error('roll back');
    });
    await rolledBack.catch((e: Error) => expect(e.message).to.equal('roll back'));
    // op 1 ran after the rollback: it does not see the transaction's row
    expect(await queued).to.deep.equal(['from-batch']);
    // op 2 ran in the same transaction as op 1: op 1 was not committed yet when op 2 ran
    expect(await late).to.deep.equal([]);
    expect(events).to.deep.equal(['trx ends', 'batch op 1', 'batch op 2']);
    expect(names()).to.deep.equal(['from-batch', 'late']);
  });

  it('commits on its turn while Kysely holds its connection outside a transaction (there is nothing to land inside)', async () => {
    let release!: () => void;
    const held = db.connection().execute(async () => {
      await new Promise<void>((r) => (release = r));
      return names();
    });
    await sleep(5); // Kysely has the connection now, with no transaction open
    expect(raw.inTransaction).to.equal(false);
    const write = batch.run(() => insert('a'));
    const outcome = await Promise.race([write.then(() => 'committed'), sleep(200).then(() => 'waiting')]);
    release();
    expect(outcome).to.equal('committed');
    expect(await held).to.deep.equal(['a']);
  });

  it('a write queued while a Kysely transaction is open lands after its rows when it commits', async () => {
    let queued!: Promise<number>;
    await db.transaction().execute(async (trx) => {
      await sql`insert into t (name) values ('trx-1')`.execute(trx);
      queued = batch.run(() => Number(insert('batch').lastInsertRowid));
      await sleep(20);
      await sql`insert into t (name) values ('trx-2')`.execute(trx);
    });
    expect(await queued).to.equal(3);
    expect(names()).to.deep.equal(['trx-1', 'trx-2', 'batch']);
  });

  // A checkpoint copies the WAL's pages into the database file: the file's size shows whether one ran.
  const dbSize = () => fs.statSync(file).size;
  const wide = (name: string) => name + 'x'.repeat(3000);

  // offThread: false, the store connection's own checkpoints (the fallback when no worker can run them).
  it('on the store connection: while quiet, every checkpointWrites committed writes are followed by a WAL checkpoint on the next turn', async () => {
    const ck = new SqliteWriteBatch(raw, db, { checkpointWrites: 3, checkpointMinMs: 0, offThread: false });
    const start = dbSize();
    await ck.run(() => insert(wide('a')));
    await ck.run(() => insert(wide('b')));
    await sleep(20);
    expect(dbSize(), 'two writes: the pages stay in the WAL').to.equal(start);
    expect(names(), 'committed all the same').to.deep.equal([wide('a'), wide('b')]);

    await ck.run(() => insert(wide('c')));
    await sleep(20);
    const first = dbSize();
    expect(first, 'the third write: a, b and c copied').to.be.greaterThan(start + 9000);

    await ck.run(() => insert(wide('d')));
    await sleep(20);
    expect(dbSize(), 'the count starts again').to.equal(first);
    await ck.run(() => insert(wide('e')));
    await ck.run(() => insert(wide('f')));
    await sleep(20);
    expect(dbSize()).to.be.greaterThan(first + 9000);
    expect(names()).to.deep.equal(['a', 'b', 'c', 'd', 'e', 'f'].map(wide));
  });

  it('at most one of its checkpoints per checkpointMinMs', async () => {
    const ck = new SqliteWriteBatch(raw, db, { checkpointWrites: 1, checkpointMinMs: 1000, offThread: false });
    await ck.run(() => insert(wide('a')));
    await sleep(20);
    const first = dbSize();
    await ck.run(() => insert(wide('b')));
    await sleep(20);
    expect(dbSize(), 'within checkpointMinMs').to.equal(first);
    await sleep(1000);
    await ck.run(() => insert(wide('c')));
    await sleep(20);
    expect(dbSize(), 'b and c copied').to.be.greaterThan(first + 6000);
  });

  it('a commit of more than quietWrites writes (a busy store) leaves checkpoints to SQLite\'s automatic one', async () => {
    const ck = new SqliteWriteBatch(raw, db, { checkpointWrites: 1, checkpointMinMs: 0, quietWrites: 2, offThread: false });
    const start = dbSize();
    await Promise.all(['a', 'b', 'c'].map((n) => ck.run(() => insert(wide(n)))));
    await sleep(20);
    expect(dbSize()).to.equal(start);
    // the next quiet commit checkpoints all of it
    await ck.run(() => insert(wide('d')));
    await sleep(20);
    expect(dbSize()).to.be.greaterThan(start + 12000);
  });

  it('a checkpoint due when the store closes is dropped quietly', async () => {
    const ck = new SqliteWriteBatch(raw, db, { checkpointWrites: 1, checkpointMinMs: 0, offThread: false });
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      // (Kysely opens its driver lazily: destroy() closes the connection only once it has been used, as a store's is)
      await sql`select 1`.execute(db);
      // the commit resolves its writes first; the checkpoint it scheduled runs on the next turn, after the close
      await ck.run(() => insert('a'));
      await db.destroy();
      await sleep(20);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(raw.open).to.equal(false);
    expect(unhandled).to.deep.equal([]);
    expect(names()).to.deep.equal(['a']);
  });

  /** Waits (up to 5 s) until `ok()` holds. */
  const until = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 250 && !ok(); i++) await sleep(20);
    expect(ok(), what).to.equal(true);
  };
  const autoCheckpoint = () => raw.pragma('wal_autocheckpoint', { simple: true });
  /** A batch with checkpoints in a worker (closed after the test), and its checkpointer. */
  const made: SqliteWriteBatch[] = [];
  const withWorker = (opts: ConstructorParameters<typeof SqliteWriteBatch>[2]) => {
    const ck = new SqliteWriteBatch(raw, db, opts);
    made.push(ck);
    return { ck, worker: ck.checkpointer as WalCheckpointer };
  };

  it('off the event loop: a worker thread checkpoints every checkpointWrites writes, busy or quiet, and the store connection\'s automatic checkpoint is off meanwhile', async () => {
    const { ck, worker } = withWorker({ checkpointWrites: 3, offThreadMinMs: 0, quietWrites: 0 });
    expect(worker.running, 'no worker before a checkpoint is due').to.equal(false);
    const start = dbSize();
    await ck.run(() => insert(wide('a')));
    await ck.run(() => insert(wide('b')));
    await sleep(50);
    expect(dbSize(), 'two writes: the pages stay in the WAL').to.equal(start);
    // three writes in one commit: a busy commit (more than quietWrites), checkpointed all the same
    await Promise.all(['c', 'd', 'e'].map((n) => ck.run(() => insert(wide(n)))));
    await until('the worker ran a checkpoint', () => worker.stats.checkpoints >= 1);
    expect(worker.running).to.equal(true);
    expect(worker.stats).to.include({ started: 1, failures: 0 });
    expect(dbSize(), 'a to e copied into the database file').to.be.greaterThan(start + 15000);
    expect(autoCheckpoint(), 'the worker checkpoints; the store connection does not').to.equal(0);
    expect(names()).to.deep.equal(['a', 'b', 'c', 'd', 'e'].map(wide));
    await ck.close();
    expect(worker.running).to.equal(false);
    expect(autoCheckpoint(), 'closed: the automatic checkpoint is back').to.equal(1000);
  });

  it('the worker stops after idleMs without a checkpoint to run (an idle gateway holds no thread) and starts again when one is due', async () => {
    const { ck, worker } = withWorker({ checkpointWrites: 1, offThreadMinMs: 0, offThread: { idleMs: 100 } });
    await ck.run(() => insert(wide('a')));
    await until('a checkpoint', () => worker.stats.checkpoints >= 1);
    expect(worker.running).to.equal(true);
    await until('stopped when idle', () => !worker.running);
    expect(autoCheckpoint(), 'no worker: the automatic checkpoint is back').to.equal(1000);
    const before = dbSize();
    await ck.run(() => insert(wide('b')));
    await until('a second worker ran a checkpoint', () => worker.stats.checkpoints >= 2);
    expect(worker.stats.started).to.equal(2);
    expect(dbSize()).to.be.greaterThan(before + 3000);
  });

  it('at most one worker checkpoint per offThreadMinMs: writes in between wait for the next one', async () => {
    const { ck, worker } = withWorker({ checkpointWrites: 1, offThreadMinMs: 600 });
    await ck.run(() => insert(wide('a')));
    await until('the first checkpoint', () => worker.stats.checkpoints >= 1);
    const first = dbSize();
    await ck.run(() => insert(wide('b')));
    await sleep(200);
    expect(worker.stats.checkpoints, 'within offThreadMinMs').to.equal(1);
    expect(dbSize()).to.equal(first);
    await sleep(500);
    await ck.run(() => insert(wide('c')));
    await until('the second checkpoint', () => worker.stats.checkpoints >= 2);
    expect(dbSize(), 'b and c copied').to.be.greaterThan(first + 6000);
  });

  it('a worker that cannot start leaves the checkpoints to the store connection (quiet commits, as without one)', async () => {
    const { ck, worker } = withWorker({ checkpointWrites: 1, checkpointMinMs: 0, offThreadMinMs: 0, offThread: { driver: '/nonexistent/better-sqlite3.js' } });
    await ck.run(() => insert(wide('a')));
    await until('the failed start noticed', () => !worker.usable);
    expect(worker.stats).to.include({ started: 1, checkpoints: 0 });
    expect(autoCheckpoint()).to.equal(1000);
    const before = dbSize();
    await ck.run(() => insert(wide('b')));
    await sleep(50);
    expect(dbSize(), 'checkpointed on the store connection').to.be.greaterThan(before + 3000);
    expect(worker.stats.started, 'not tried again').to.equal(1);
    expect(names()).to.deep.equal(['a', 'b'].map(wide));
  });

  it('a worker that dies gives the checkpoints back to the store connection until the next one due starts another', async () => {
    const { ck, worker } = withWorker({ checkpointWrites: 1, offThreadMinMs: 0 });
    await ck.run(() => insert(wide('a')));
    await until('a checkpoint', () => worker.stats.checkpoints >= 1);
    expect(autoCheckpoint()).to.equal(0);
    // (reaching into the checkpointer: nothing outside it may stop its thread)
    await (worker as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await until('the loss noticed', () => !worker.running);
    expect(autoCheckpoint(), 'no worker: the automatic checkpoint is back').to.equal(1000);
    expect(worker.usable, 'one loss after a finished checkpoint: another worker may start').to.equal(true);
    const before = dbSize();
    await ck.run(() => insert(wide('b')));
    await until('a second worker ran a checkpoint', () => worker.stats.checkpoints >= 2);
    expect(worker.stats.started).to.equal(2);
    expect(dbSize()).to.be.greaterThan(before + 3000);
    expect(names()).to.deep.equal(['a', 'b'].map(wide));
  });

  it('writes that never pause: the WAL still starts over from its beginning, so it stays short (the worker\'s checkpoint is finished on the store connection)', async () => {
    // SQLite writes the WAL from its start again only in a write transaction begun while every frame has been
    // copied to the database file. A worker's PASSIVE checkpoint copies the frames there were when it began; a
    // store that commits again before it ends (one request after another) never found it complete, and its WAL
    // grew without end (73 MB after 6,000 streams one at a time, 12 KB a request).
    const { ck, worker } = withWorker({ checkpointWrites: 10, offThreadMinMs: 0, restartFrames: 200 });
    const header = () => {
      const fd = fs.openSync(`${file}-wal`, 'r');
      try {
        const b = Buffer.alloc(32);
        fs.readSync(fd, b, 0, 32, 0);
        return { pageSize: b.readUInt32BE(8), sequence: b.readUInt32BE(12) };
      } finally {
        fs.closeSync(fd);
      }
    };
    const walFrames = (pageSize: number) => (fs.statSync(`${file}-wal`).size - 32) / (pageSize + 24);
    // until the worker runs (its thread starts while the first hundreds of writes go on)
    let n = 0;
    while (worker.stats.checkpoints < 2) await ck.run(() => insert(wide(`w${n++}`)));
    const before = { ...header(), frames: walFrames(header().pageSize) };
    for (let i = 0; i < 2500; i++) await ck.run(() => insert(wide(`w${n++}`)));
    const after = { ...header(), frames: walFrames(header().pageSize) };
    expect(worker.stats.failures).to.equal(0);
    // ~30 times here (every ~240 frames: restartFrames, and the frames the last worker's run did not see); none before
    expect(after.sequence - before.sequence, 'times the WAL started over').to.be.at.least(10);
    // The file keeps the largest size it ever had. Before, it grew by ~16,000 frames over these writes; now a
    // worker's run that the scheduler holds up lets a WAL grow past restartFrames now and then (~1,400 frames).
    expect(after.frames - before.frames, 'frames the WAL file grew by').to.be.below(4000);
    expect(names().length).to.equal(n);
  });

  it('every write survives checkpoints running beside the commits, and the last close checkpoints the WAL away', async () => {
    const { ck, worker } = withWorker({ checkpointWrites: 5, offThreadMinMs: 0 });
    const all: string[] = [];
    for (let round = 0; round < 20; round++) {
      const batchNames = Array.from({ length: 10 }, (_, i) => `r${round}-${i}`);
      all.push(...batchNames);
      await Promise.all(batchNames.map((n) => ck.run(() => insert(wide(n)))));
      await sleep(2);
    }
    await until('checkpoints ran', () => worker.stats.checkpoints >= 2);
    expect(worker.stats.failures).to.equal(0);
    await ck.close();
    observer.close();
    await sql`select 1`.execute(db); // (Kysely opens its driver lazily)
    await db.destroy();
    expect(fs.existsSync(`${file}-wal`), 'the WAL file is gone after the last connection closed').to.equal(false);
    const again = new SQLite(file, { readonly: true });
    try {
      expect((again.prepare('select name from t order by id').all() as Array<{ name: string }>).map((r) => r.name)).to.deep.equal(all.map(wide));
      expect(again.pragma('integrity_check', { simple: true })).to.equal('ok');
    } finally {
      again.close();
      observer = new SQLite(file, { readonly: true }); // afterEach closes one
    }
  });

  it('a write queued after the store is closed rejects instead of hanging', async () => {
    // (Kysely opens its driver lazily: destroy() closes the connection only once it has been used, as a store's is)
    await sql`select 1`.execute(db);
    await db.destroy();
    expect(raw.open).to.equal(false);
    const outcome = await Promise.race([
      batch.run(() => insert('never')).then(() => 'resolved', (e: Error) => `rejected: ${e.message}`),
      sleep(2000).then(() => 'hung'),
    ]);
    expect(outcome).to.equal('rejected: The database connection is not open');
  });

  it('RowsInsert: a flush\'s rows go in multi-row INSERTs of 64, 16, 4 and 1 rows, each row once, in order, with its own values', async () => {
    raw.exec('create table r (id integer primary key, a text, b integer, c real)');
    const rows = new RowsInsert('insert into r (a, b, c)', 3);
    // statement runs counted through the batch's prepared statements
    let runs = 0;
    const statement = batch.statement.bind(batch);
    batch.statement = (text: string) => {
      const s = statement(text);
      return { run: (...args: unknown[]) => { runs++; return s.run(...args); } } as unknown as SQLite.Statement;
    };
    // rows → statement runs: 150 = 64 + 64 + 16 + 4 + 1 + 1
    for (const [n, expected] of [[0, 0], [1, 1], [3, 3], [4, 1], [5, 2], [21, 3], [64, 1], [85, 4], [150, 6]]) {
      raw.exec('delete from r');
      runs = 0;
      const values: unknown[] = [];
      for (let i = 0; i < n; i++) values.push(`row ${i}`, i * 10, i % 7 === 3 ? null : i / 4);
      await batch.run(() => rows.run(batch, values));
      const stored = observer.prepare('select a, b, c from r order by id').raw().all();
      expect(stored, `${n} rows`).to.deep.equal(Array.from({ length: n }, (_, i) => [`row ${i}`, i * 10, i % 7 === 3 ? null : i / 4]));
      expect(runs, `statement runs for ${n} rows`).to.equal(expected);
    }
  });
});

/** The store's own batch, through the Store API: credit holds are group-committed writes. */
describe('SqliteWriteBatch inside a real store (openStore on SQLite)', () => {
  let store: Store;
  before(async () => {
    store = await openStore(sqliteConfig());
    await sql`create table scratch (id integer primary key, note text not null)`.execute(store.db);
  });
  after(() => store.close());

  it('a credit hold made while a Kysely transaction is open waits for it and survives its rollback', async () => {
    const uid = await store.keys.createUser('batch-user');
    await store.credits.grant(uid, 1000);
    let hold!: Promise<boolean>;
    let heldDuringTrx: boolean | undefined;
    const trx = store.db.transaction().execute(async (t) => {
      await sql`insert into scratch (note) values ('rolled back')`.execute(t);
      hold = store.credits.hold(uid, 'batch-hold-1', 300, 60_000);
      void hold.then((v) => { heldDuringTrx = v; });
      await sleep(30);
      expect(heldDuringTrx, 'the hold must not commit while the transaction holds the connection').to.equal(undefined);
      throw new Error('roll back');
    });
    const err = await trx.then(() => undefined, (e: Error) => e);
    expect(err?.message).to.equal('roll back');
    expect(await hold).to.equal(true);
    expect(await store.credits.balance(uid)).to.equal(700);
    // the hold is open: the ledger sums to the balance plus it
    expect(await store.credits.ledgerSum(uid)).to.equal(1000);
    expect(await store.credits.openHoldSum(uid)).to.equal(300);
    expect(await store.credits.openHoldCount(uid)).to.equal(1);
    const { rows } = await sql<{ n: number }>`select count(*) as n from scratch`.execute(store.db);
    expect(Number(rows[0].n)).to.equal(0);
  });

  it('close() in a process with nothing else to do finishes, with the checkpoint worker running (it is held while it stops)', () => {
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-close-'));
    const script = path.join(dir, 'close.mts');
    fs.writeFileSync(script, `
      import { openStore } from ${JSON.stringify(path.join(root, 'src/store/index.ts'))};
      const store = await openStore({ dialect: 'sqlite', file: ${JSON.stringify(path.join(dir, 'gateway.db'))} });
      const uid = await store.keys.createUser('close-user');
      await store.credits.grant(uid, 1_000_000);
      // 60 group-committed writes: the checkpoint worker is asked for at the 40th
      for (let i = 0; i < 30; i++) await store.credits.hold(uid, 'h' + i, 10, 60_000);
      for (let i = 0; i < 30; i++) await store.credits.settle('h' + i, 5);
      await new Promise((r) => setTimeout(r, 300));
      await store.close();
      console.log('closed', await store.credits.balance(uid).catch(() => 'store closed'));
    `);
    const out = execFileSync(process.execPath, ['--import', 'tsx', script], { cwd: root, encoding: 'utf8', timeout: 20_000 });
    expect(out.trim()).to.equal('closed store closed');
    expect(fs.existsSync(path.join(dir, 'gateway.db-wal')), 'the store connection closed last, and took the WAL away').to.equal(false);
    const db = new SQLite(path.join(dir, 'gateway.db'), { readonly: true });
    try {
      expect((db.prepare('select balance_nano from credit_balances').get() as { balance_nano: number }).balance_nano).to.equal(1_000_000 - 30 * 5);
    } finally {
      db.close();
    }
  });

  it('concurrent holds in one tick: a duplicate hold id fails alone, the others are committed', async () => {
    const uid = await store.keys.createUser('batch-user-2');
    await store.credits.grant(uid, 1000);
    const results = await Promise.allSettled([
      store.credits.hold(uid, 'dup-hold', 100, 60_000),
      store.credits.hold(uid, 'dup-hold', 100, 60_000),
      store.credits.hold(uid, 'other-hold', 200, 60_000),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[0] as PromiseFulfilledResult<boolean>).value).to.equal(true);
    expect((results[2] as PromiseFulfilledResult<boolean>).value).to.equal(true);
    // the failed hold's debit was rolled back with it
    expect(await store.credits.balance(uid)).to.equal(700);
    expect(await store.credits.openHoldSum(uid)).to.equal(300);
    expect(await store.credits.ledgerSum(uid)).to.equal(1000);
    expect(await store.credits.openHoldCount(uid)).to.equal(2);
  });
});
