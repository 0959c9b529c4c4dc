/**
 * Group commit for the embedded SQLite store. A commit costs far more than the small statements of a credit hold
 * or settle (its pages are written to the WAL), so the writes the request path waits for are queued and run
 * together in one `BEGIN IMMEDIATE … COMMIT` on the next turn of the event loop: at concurrency 1 a write waits
 * no longer than before; under load one commit carries every write made meanwhile. Each write is still committed
 * before its promise resolves, and each one sees the writes queued before it (they run in order).
 *
 * Kysely owns the same connection and keeps a transaction open across awaits; the batch runs while holding
 * Kysely's connection (its mutex), so it never lands inside someone else's transaction.
 */
import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';

interface Op {
  run: () => unknown;
  resolve: (v: any) => void;
  reject: (e: unknown) => void;
}

export class SqliteWriteBatch {
  private queue: Op[] = [];
  private scheduled = false;
  private readonly statements = new Map<string, SQLite.Statement>();

  constructor(private readonly raw: SQLite.Database, private readonly kysely: Kysely<any>) {}

  /** A prepared statement, prepared once per SQL text. */
  statement(sqlText: string): SQLite.Statement {
    let s = this.statements.get(sqlText);
    if (!s) this.statements.set(sqlText, (s = this.raw.prepare(sqlText)));
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
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
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
      results = this.raw.transaction(() => ops.map((op) => op.run())).immediate();
    } catch {
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
    ops.forEach((op, i) => op.resolve(results[i]));
  }
}
