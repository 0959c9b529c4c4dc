/**
 * Group commit for the embedded SQLite store. A commit costs far more than the small statements of a credit hold
 * or settle (its pages are written to the WAL), so the writes the request path waits for are queued and run
 * together in one `BEGIN IMMEDIATE … COMMIT` on the next turn of the event loop: at concurrency 1 a write waits
 * no longer than before; under load one commit carries every write made meanwhile. Each write is still committed
 * before its promise resolves, and each one sees the writes queued before it (they run in order).
 *
 * "The next turn" is the check phase after the one the first write's turn reaches: the batch runs after whatever
 * else that turn queued with setImmediate. That is undici's case: on a reused keep-alive socket it writes the next
 * request from a setImmediate (it first lets pending bytes or a FIN on the idle socket arrive), so a credit hold
 * queued just before the upstream call used to commit before the request left, ~0.1–0.2 ms on the path to the
 * first byte at concurrency 1; now the request leaves first and the hold commits while the upstream works (the
 * answer still waits for the committed hold). Under load the extra turn lets a commit gather more writes.
 *
 * Kysely owns the same connection and keeps a transaction open across awaits; the batch never lands inside it.
 * When the connection is in no transaction the batch commits at once: its transaction is synchronous from BEGIN to
 * COMMIT, so nothing of Kysely's can come between (a Kysely transaction that has its connection but has not begun
 * yet begins after it). Only while one is open does the batch wait for Kysely's connection (its mutex), i.e. for
 * that transaction's end. (Going through Kysely's connection for every commit, and a new better-sqlite3 transaction
 * function each time, five wrappers, ~6.5 µs, cost ~75 µs of CPU per request at c=1: `npm run bench:store`,
 * 351 -> 276 µs. The batch keeps one transaction function.)
 *
 * WAL checkpoints. SQLite's automatic checkpoint runs inside the commit that takes the WAL past 1,000 pages and
 * copies them all to the database file with two fsyncs, on the event loop: 5–11 ms every 100–250 ms at concurrency
 * 1, the largest part of that load's 99th percentile. So the batch runs checkpoints itself, in PASSIVE mode, once
 * `checkpointWrites` writes have been committed since its last one. It counts writes, not time: each checkpoint's
 * two fsyncs are a fixed cost, and a store writing little (paced streams) needs few.
 * - By default a worker thread runs them on a connection of its own (src/store/wal-checkpointer.ts), at most one
 *   per `offThreadMinMs`, busy store or quiet, and the store connection's automatic checkpoint is off while it
 *   lives. Run on the event loop they stopped every request in flight for 1.3–3.7 ms each, 2.4–6.7 % of the time
 *   under the benchmark's loads; in the worker they stop nothing (session 13 in docs/PERFORMANCE.md).
 *   SQLite writes the WAL from its beginning again only in a write transaction begun while every frame of it is in
 *   the database file. A worker's PASSIVE checkpoint copies the frames there were when it began, and a store that
 *   commits again before it ends finds it incomplete: one request after another, the WAL never started over and grew
 *   without end (73 MB after 6,000 streams one at a time; every commit's WAL-index insert and every page lookup
 *   slower as it grew: session 29). So once the WAL holds `restartFrames` frames, a worker's checkpoint left
 *   incomplete is finished on the store connection on the next turn (when at most `finishWrites` writes were
 *   committed while it ran; between two commits, where nothing else writes), and the next commit starts the WAL
 *   over; with more left, a later run of the worker's is finished instead.
 * - Without the worker (`offThread: false`, or it could not start) they run on the store connection, on the turn
 *   after a quiet commit (a few writes), at most one per `checkpointMinMs`: short checkpoints (~0.5 ms) instead of
 *   rare long ones, while under load the automatic checkpoint stays in charge. (A fixed 20 ms instead checkpointed
 *   paced streams 50 times a second and delayed their first byte by ~0.9 ms.)
 */
import { performance } from 'node:perf_hooks';
import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { WalCheckpointer, type CheckpointResult, type CheckpointerOptions } from './wal-checkpointer.js';

export interface WriteBatchOptions {
  /** Writes committed between two of the batch's own checkpoints; 0 turns them off (the automatic one remains). */
  checkpointWrites?: number;
  /** The least time between two of them. */
  checkpointMinMs?: number;
  /** A commit of at most this many writes counts as quiet, and may be followed by a checkpoint. */
  quietWrites?: number;
  /**
   * Checkpoints in a worker thread (src/store/wal-checkpointer.ts): asked for every `checkpointWrites` writes, at
   * most once per `offThreadMinMs`, quiet or not. Off: on the store connection, after quiet commits (above).
   */
  offThread?: boolean | CheckpointerOptions;
  offThreadMinMs?: number;
  /**
   * The WAL's length in frames (pages) from which a worker's checkpoint left incomplete is finished on the store
   * connection, so that the WAL starts over (see the header); default 1,000, SQLite's own automatic checkpoint.
   */
  restartFrames?: number;
  /**
   * The most writes committed while the worker's checkpoint ran that the store connection copies itself (they are
   * what it left); with more, it waits for a later run of the worker's.
   */
  finishWrites?: number;
}

const CHECKPOINT_DEFAULTS: Required<WriteBatchOptions> = {
  checkpointWrites: 40, checkpointMinMs: 10, quietWrites: 4, offThread: true, offThreadMinMs: 100, restartFrames: 1000, finishWrites: 256,
};

interface Op {
  run: () => unknown;
  resolve: (v: any) => void;
  reject: (e: unknown) => void;
}

export class SqliteWriteBatch {
  private queue: Op[] = [];
  private scheduled = false;
  private readonly statements = new Map<string, SQLite.Statement>();
  private readonly plucked = new Map<string, SQLite.Statement>();
  private readonly checkpoints: Required<WriteBatchOptions>;
  private lastCheckpoint = -Infinity;
  /** Writes committed since the last checkpoint: a stand-in for the WAL frames it would copy. */
  private writesSinceCheckpoint = 0;
  private checkpointDue = false;
  /** Writes committed since the worker's checkpoint in progress (or its last one) began. */
  private writesDuringCheckpoint = 0;
  /** The ops of the commit in progress, run by `transaction` (made once: better-sqlite3 builds five functions). */
  private running: Op[] = [];
  private readonly transaction: SQLite.Transaction<() => unknown[]>;
  /** The off-thread checkpoints, unless they are off (or the database is in memory). */
  readonly checkpointer: WalCheckpointer | undefined;

  constructor(private readonly raw: SQLite.Database, private readonly kysely: Kysely<any>, opts: WriteBatchOptions = {}) {
    this.checkpoints = { ...CHECKPOINT_DEFAULTS, ...opts };
    // An in-memory database has no WAL to checkpoint.
    if (raw.memory) this.checkpoints.checkpointWrites = 0;
    const off = this.checkpoints.offThread;
    if (off && this.checkpoints.checkpointWrites > 0) this.checkpointer = new WalCheckpointer(raw, off === true ? {} : off, {
      started: () => (this.writesDuringCheckpoint = 0),
      finished: (r) => this.afterWorker(r),
    });
    this.transaction = raw.transaction(() => this.running.map((op) => op.run()));
  }

  /** A prepared statement, prepared once per SQL text. */
  statement(sqlText: string): SQLite.Statement {
    let s = this.statements.get(sqlText);
    if (!s) this.statements.set(sqlText, (s = this.raw.prepare(sqlText)));
    return s;
  }

  /** The same for a query whose `get` answers its first column's value (better-sqlite3's `pluck`): no row object. */
  value(sqlText: string): SQLite.Statement {
    let s = this.plucked.get(sqlText);
    if (!s) this.plucked.set(sqlText, (s = this.raw.prepare(sqlText).pluck()));
    return s;
  }

  /**
   * Runs `fn` (synchronous statements only) in the next batch's transaction; resolves once that commits. If the
   * batch fails, the others are run again on their own: `fn` must do nothing outside the database.
   */
  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: fn, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // Two check phases on: what else this turn queued for its check phase runs first (see the header).
        setImmediate(() => setImmediate(() => void this.flush()));
      }
    });
  }

  private async flush(): Promise<void> {
    if (!this.raw.inTransaction) {
      this.scheduled = false;
      this.commit(this.queue.splice(0));
      return;
    }
    let ops: Op[] = [];
    try {
      await this.kysely.connection().execute(async () => {
        // Taken once the connection is ours: writes queued while waiting for it join this batch.
        this.scheduled = false;
        ops = this.queue.splice(0);
        this.commit(ops);
      });
    } catch (err) {
      // The connection could not be had (the store is closing): nothing ran.
      this.scheduled = false;
      for (const op of [...ops, ...this.queue.splice(0)]) op.reject(err);
    }
  }

  private commit(ops: Op[]): void {
    if (!ops.length) return;
    let results: unknown[];
    try {
      this.running = ops;
      results = this.transaction.immediate();
    } catch {
      this.running = [];
      // Rolled back as a whole: one failing write must not fail its neighbours, so each runs again on its own.
      for (const op of ops) {
        try {
          op.resolve(this.raw.transaction(op.run).immediate());
        } catch (err) {
          op.reject(err);
        }
      }
      return;
    }
    this.running = [];
    ops.forEach((op, i) => op.resolve(results[i]));
    this.writesSinceCheckpoint += ops.length;
    this.writesDuringCheckpoint += ops.length;
    const c = this.checkpoints;
    if (c.checkpointWrites === 0 || this.writesSinceCheckpoint < c.checkpointWrites || this.checkpointDue) return;
    const now = performance.now();
    const since = now - this.lastCheckpoint;
    if (this.checkpointer?.usable) {
      if (since >= c.offThreadMinMs && this.checkpointer.request()) {
        this.lastCheckpoint = now;
        this.writesSinceCheckpoint = 0;
      }
      return;
    }
    if (ops.length <= c.quietWrites && since >= c.checkpointMinMs) {
      // On the next turn: the callers of this commit answer first.
      this.checkpointDue = true;
      setImmediate(() => void this.checkpoint());
    }
  }

  /**
   * A worker's checkpoint ended. It copied the frames the WAL held when it began; the store's commits since then are
   * left (the WAL is incomplete, and a commit begun now does not start it over). Once the WAL holds `restartFrames`
   * frames, and no more than `finishWrites` writes were committed while the worker ran, those are copied here on the
   * next turn, between two commits, and the next commit starts the WAL over: true (a checkpoint asked of the worker
   * meanwhile is not needed). With more of them the worker keeps its pace and a later run finishes it. (Asking the
   * worker again at once instead kept it checkpointing back to back under load: c=64 −19 %, session 29.)
   */
  private afterWorker({ log }: CheckpointResult): boolean {
    const c = this.checkpoints;
    if (log < c.restartFrames || this.checkpointDue || this.writesDuringCheckpoint > c.finishWrites) return false;
    this.checkpointDue = true;
    setImmediate(() => void this.checkpoint());
    return true;
  }

  /** Stops the checkpoint worker, if one runs (before the store connection closes). */
  async close(): Promise<void> {
    await this.checkpointer?.close();
  }

  private async checkpoint(): Promise<void> {
    const run = () => {
      if (this.raw.open) this.raw.pragma('wal_checkpoint(PASSIVE)');
    };
    try {
      // Like a batch: at once, or through Kysely's connection while a transaction of its own is open.
      if (!this.raw.inTransaction) run();
      else await this.kysely.connection().execute(async () => run());
    } catch {
      // The store is closing: nothing to do. (Frames a reader still needs are copied by a later checkpoint.)
    } finally {
      this.lastCheckpoint = performance.now();
      this.writesSinceCheckpoint = 0;
      this.checkpointDue = false;
    }
  }
}
