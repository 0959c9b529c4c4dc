/**
 * WAL checkpoints off the event loop. A checkpoint copies the pages written to the WAL into the database file and
 * syncs both files: 1.3–3.7 ms per checkpoint in the gateway on this project's benchmark machine, of which a third
 * to a half is CPU and the rest waiting for the disk (docs/PERFORMANCE.md, session 13). Run on the store's own
 * connection it stops every request in flight for that long; here a worker thread runs it on a second connection
 * to the same file, and the event loop goes on serving (WAL mode lets the writer append while a PASSIVE checkpoint
 * copies older frames).
 *
 * The worker is started when the first checkpoint is asked for and stopped after `idleMs` without one, so a gateway
 * left idle holds no second thread and no second connection (a worker costs several MB of memory while it lives).
 * While it lives the store connection's automatic checkpoint is off, since the worker is asked often enough
 * (SqliteWriteBatch counts the writes); when it stops, or fails, the automatic checkpoint comes back, so the WAL
 * can never grow without bound because of the worker. Each finished checkpoint reports how far it got (the WAL's
 * frames when it began): SqliteWriteBatch finishes one that the store's own commits left incomplete, or the WAL
 * would never start over from its beginning under writes that never pause.
 */
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import type SQLite from 'better-sqlite3';

/** The worker's program: one connection, one PASSIVE checkpoint per message. CommonJS (eval'd workers are). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = -512');
parentPort.on('message', (msg) => {
  if (msg === 'close') { db.close(); parentPort.close(); return; }
  const started = performance.now();
  try {
    const r = db.pragma('wal_checkpoint(PASSIVE)')[0];
    parentPort.postMessage({ ok: true, ms: performance.now() - started, log: r.log });
  } catch {
    parentPort.postMessage({ ok: false, ms: performance.now() - started });
  }
});
parentPort.postMessage({ ready: true });
`;

export interface CheckpointerOptions {
  /** The worker stops after this long without a checkpoint to run. */
  idleMs?: number;
  /** The store connection's automatic checkpoint (pages) restored when no worker runs: SQLite's default. */
  autoCheckpointPages?: number;
  /** The SQLite driver module the worker loads (default: this process's better-sqlite3); tests name a missing one. */
  driver?: string;
}

/**
 * What a finished checkpoint saw: the frames the WAL held when it began (`log`), all of them now in the database file
 * (a PASSIVE checkpoint with no reader holding older frames back). Frames the store committed while it ran are not.
 */
export interface CheckpointResult {
  log: number;
}

/**
 * Told when the worker begins a checkpoint, and when it finishes one; `finished` returns true when it saw to what
 * comes next (a checkpoint asked for meanwhile is then dropped).
 */
export interface CheckpointHooks {
  started?: () => void;
  finished?: (r: CheckpointResult) => boolean;
}

/** What the worker reported, summed (for tests and the benchmark). */
export interface CheckpointStats {
  started: number;
  checkpoints: number;
  failures: number;
  workerMs: number;
}

export class WalCheckpointer {
  private worker: Worker | undefined;
  private ready = false;
  /** A checkpoint is running in the worker, or waits for it to be ready. */
  private busy = false;
  /** Asked for while one ran: another one follows. */
  private again = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The worker could not start, or died three times running: checkpoints stay with the store connection. */
  private broken = false;
  /** Workers lost since the last checkpoint one of them finished. */
  private losses = 0;
  private readonly idleMs: number;
  private readonly autoPages: number;
  private readonly driver: string | undefined;
  readonly stats: CheckpointStats = { started: 0, checkpoints: 0, failures: 0, workerMs: 0 };

  constructor(private readonly raw: SQLite.Database, opts: CheckpointerOptions = {}, private readonly hooks: CheckpointHooks = {}) {
    this.idleMs = opts.idleMs ?? 30_000;
    this.autoPages = opts.autoCheckpointPages ?? 1000;
    this.driver = opts.driver;
  }

  /** Whether checkpoints can be handed to a worker (none failed to start, the store is open). */
  get usable(): boolean {
    return !this.closed && !this.broken;
  }

  /** Whether a worker is alive (started, not stopped). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /**
   * Asks for a PASSIVE checkpoint; one already running or waiting covers it (another follows it once). False when
   * the worker cannot take it (it failed to start, or the store is closing): the caller checkpoints itself.
   */
  request(): boolean {
    if (this.closed || this.broken) return false;
    if (this.busy) {
      this.again = true;
      return true;
    }
    this.busy = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (!this.worker) {
      if (!this.start()) {
        this.busy = false;
        return false;
      }
    } else if (this.ready) this.post(this.worker);
    return true;
  }

  /** Starts the worker; false (and checkpoints stay with the store connection) when it cannot be. */
  private start(): boolean {
    let worker: Worker;
    try {
      const driver = this.driver ?? createRequire(import.meta.url).resolve('better-sqlite3');
      worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file: this.raw.name, driver }, resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 } });
    } catch {
      this.broken = true;
      return false;
    }
    this.worker = worker;
    this.stats.started++;
    worker.unref();
    worker.on('message', (msg: { ready?: boolean; ok?: boolean; ms?: number; log?: number }) => {
      if (worker !== this.worker) return;
      if (msg.ready) {
        this.ready = true;
        // The worker checkpoints from now on: the store connection's own automatic checkpoint stops.
        this.setAutoCheckpoint(0);
        this.post(worker);
        return;
      }
      this.stats.workerMs += msg.ms ?? 0;
      this.losses = 0;
      if (msg.ok) this.stats.checkpoints++;
      else this.stats.failures++;
      this.busy = false;
      // The hook may take over what comes next (a checkpoint of its own): then a run asked for meanwhile is not needed.
      if (msg.ok && this.hooks.finished?.({ log: msg.log ?? -1 }) === true) this.again = false;
      if (this.again) {
        this.again = false;
        this.request();
      } else {
        this.idleTimer = setTimeout(() => this.stop(), this.idleMs);
        this.idleTimer.unref();
      }
    });
    worker.on('error', () => this.lost(worker));
    worker.on('exit', () => this.lost(worker));
    return true;
  }

  private post(worker: Worker): void {
    this.hooks.started?.();
    worker.postMessage('checkpoint');
  }

  /**
   * The worker died (or could not start): the store connection checkpoints by itself again, and the next checkpoint
   * due starts another worker, unless this one never started or three died without finishing a checkpoint between.
   */
  private lost(worker: Worker): void {
    if (worker !== this.worker) return;
    if (!this.ready || ++this.losses >= 3) this.broken = true;
    this.stats.failures++;
    this.detach();
  }

  /** No worker from now on: nothing waits for one, and the store connection's automatic checkpoint is back. */
  private detach(): void {
    this.worker = undefined;
    this.ready = false;
    this.busy = false;
    this.again = false;
    this.setAutoCheckpoint(this.autoPages);
  }

  private setAutoCheckpoint(pages: number): void {
    try {
      if (this.raw.open) this.raw.pragma(`wal_autocheckpoint = ${pages}`);
    } catch {
      // The store is closing.
    }
  }

  /** Stops the worker (after the checkpoint it runs, if any); the automatic checkpoint comes back. */
  async stop(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const worker = this.worker;
    if (!worker) return;
    this.detach();
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // Held until it is gone: unref'd, a process with nothing else to do would end while close() waits.
    worker.ref();
    worker.postMessage('close');
    await exited;
  }

  /** At the store's close: the worker goes first (the last connection to close checkpoints the WAL away). */
  async close(): Promise<void> {
    this.closed = true;
    await this.stop();
  }
}
