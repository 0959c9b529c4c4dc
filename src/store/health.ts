import { setImmediate as turn } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import { RowsInsert, healthBucketDeltas, writeHealthBucketsSqlite } from './rollups.js';
import type { SqliteWriteBatch } from './sqlite-batch.js';
import { KeyedRows } from './keyed-rows.js';
import { writeHealthPg, type RecordWriter } from './pg-records.js';

export interface HealthObservation {
  gateway: string;
  model: string;
  provider: string;
  ok: boolean;
  /** success | error | timeout | rate_limited */
  status: string;
  latencyMs: number | null;
  error: string | null;
  ts: number;
  source: 'passive' | 'probe';
}

/** One (gateway, model)'s observations of a batch folded into a counter update, as if applied one by one. */
function fold(obs: HealthObservation[]) {
  const last = obs[obs.length - 1];
  let lastOk = -1;
  let lastFail = -1;
  obs.forEach((o, i) => { if (o.ok) lastOk = i; else lastFail = i; });
  const successes = obs.filter((o) => o.ok).length;
  return {
    gateway: last.gateway, model: last.model, provider: last.provider,
    calls: obs.length, successes, errors: obs.length - successes,
    total_latency_ms: obs.reduce((s, o) => s + (o.latencyMs ?? 0), 0),
    /** failures after the batch's last success; without one, they add to the stored run */
    consecutive_failures: lastOk >= 0 ? obs.length - 1 - lastOk : obs.length,
    last_status: last.status, last_latency_ms: last.latencyMs, last_checked: last.ts,
    last_error: lastFail >= 0 ? obs[lastFail].error : null,
    /** null when the batch had no success (the stored run of failures goes on), and no failure (the last error stays) */
    last_success: lastOk >= 0 ? obs[lastOk].ts : null, last_failure: lastFail >= 0 ? obs[lastFail].ts : null,
  };
}

export type HealthFold = ReturnType<typeof fold>;

/**
 * A fold applied to a model's stored counters, for both databases: a batch with a success has a last_success, one
 * with a failure a last_failure, and `excluded` (the row the insert proposed) says which it had.
 */
export const HEALTH_ON_CONFLICT = `on conflict (gateway, model) do update set
  calls = model_health.calls + excluded.calls,
  successes = model_health.successes + excluded.successes,
  errors = model_health.errors + excluded.errors,
  total_latency_ms = model_health.total_latency_ms + excluded.total_latency_ms,
  consecutive_failures = case when excluded.last_success is not null then excluded.consecutive_failures
    else model_health.consecutive_failures + excluded.calls end,
  last_status = excluded.last_status,
  last_error = case when excluded.last_failure is not null then excluded.last_error else model_health.last_error end,
  last_latency_ms = excluded.last_latency_ms,
  last_checked = excluded.last_checked,
  last_success = coalesce(excluded.last_success, model_health.last_success),
  last_failure = coalesce(excluded.last_failure, model_health.last_failure)`;

/**
 * Per (gateway, model) health counters, a history of observations (the last calls, for status) and 5-minute
 * buckets (24 h counters and uptime), written together in one transaction.
 */
export class HealthRepo {
  /**
   * `batch` on SQLite: the recorder's flush joins the group commit with prepared statements; `pool` on PostgreSQL:
   * it is three named set-based statements (src/store/pg-records.ts).
   */
  constructor(private readonly db: Kysely<Database>, private readonly writer: RecordWriter) {}

  /** Applies a batch of observations (the recorder batches them off the request path). */
  async record(batch: HealthObservation[]): Promise<void> {
    if (!batch.length) return;
    const byPair = new KeyedRows<HealthObservation[]>();
    for (const o of batch) {
      const parts = [o.gateway, o.model];
      const list = byPair.get(parts);
      if (list) list.push(o); else byPair.add(parts, [o]);
    }
    // one upsert per pair, in key order (concurrent PostgreSQL writers then lock rows in one order)
    const folds = byPair.sorted().map(fold);
    const { writer } = this;
    if ('batch' in writer) return writer.batch.run(() => writeHealthSqlite(writer.batch, folds, batch));
    return writeHealthPg(writer.pool, folds, batch, healthBucketDeltas(batch));
  }

  async get(gateway: string, model: string) {
    return this.db.selectFrom('model_health').selectAll().where('gateway', '=', gateway).where('model', '=', model).executeTakeFirst();
  }

  async all() {
    return this.db.selectFrom('model_health').selectAll().orderBy('gateway').orderBy('model').execute();
  }
}

/**
 * Deletes what no read needs any more: each (gateway, model)'s history rows older than `historyBefore`, except its
 * last `keepCalls` (the model's detail shows its last 100 calls, however old), and 5-minute buckets older than
 * `bucketsBefore` (uptime reads 30 days). Both tables get a row or an update with every call, so without this they
 * grow for as long as the gateway runs. Deletes go in chunks of `chunk` rows, each its own statement (and, on
 * SQLite, its own short commit), through the (gateway, model, ts, id) and (bucket) indexes, with a turn of the event
 * loop between two (better-sqlite3's statements resolve as microtasks: without it a backlog of 500,000 rows was one
 * 750 ms block). `stopped` is asked before each chunk: a stopping gateway does not wait for a long backlog. Returns
 * the rows deleted.
 */
export async function pruneHealth(db: Kysely<Database>, historyBefore: number, bucketsBefore: number, keepCalls = 100, chunk = 1000, stopped = () => false): Promise<{ history: number; buckets: number }> {
  let history = 0;
  const pairs = await db.selectFrom('model_health').select(['gateway', 'model']).execute();
  for (const { gateway, model } of pairs) {
    if (stopped()) return { history, buckets: 0 };
    const nth = await db.selectFrom('model_health_history').select(['ts', 'id']).where('gateway', '=', gateway).where('model', '=', model)
      .orderBy('ts', 'desc').orderBy('id', 'desc').limit(1).offset(keepCalls - 1).executeTakeFirst();
    if (!nth) continue;
    // older than the cut-off and than the last `keepCalls` (the ones after `nth` in (ts, id) order, and `nth`)
    const [kts, kid] = [Number(nth.ts), Number(nth.id)];
    while (!stopped()) {
      const r = await db.deleteFrom('model_health_history').where('id', 'in', (q) => q.selectFrom('model_health_history').select('id')
        .where('gateway', '=', gateway).where('model', '=', model).where('ts', '<', historyBefore)
        .where((eb) => eb.or([eb('ts', '<', kts), eb.and([eb('ts', '=', kts), eb('id', '<', kid)])]))
        .orderBy('ts').orderBy('id').limit(chunk)).executeTakeFirst();
      const n = Number(r.numDeletedRows);
      history += n;
      if (n < chunk) break;
      await turn();
    }
  }
  let buckets = 0;
  while (!stopped()) {
    // up to the chunk-th oldest bucket (with every row of that bucket), or the rest when fewer are left
    const nth = await db.selectFrom('model_health_buckets').select('bucket').where('bucket', '<', bucketsBefore)
      .orderBy('bucket').limit(1).offset(chunk - 1).executeTakeFirst();
    const r = await db.deleteFrom('model_health_buckets')
      .where('bucket', nth ? '<=' : '<', nth ? Number(nth.bucket) : bucketsBefore).executeTakeFirst();
    buckets += Number(r.numDeletedRows);
    if (!nth) break;
    await turn();
  }
  return { history, buckets };
}

/**
 * The SQL text made once: a text built per flush is a new string, hashed and compared in full to find its prepared
 * statement (src/store/sqlite-batch.ts `statement`).
 */
const HEALTH_UPSERT_SQLITE = `insert into model_health (gateway, model, provider, calls, successes, errors, total_latency_ms,
      consecutive_failures, last_status, last_error, last_latency_ms, last_checked, last_success, last_failure)
    values (@gateway, @model, @provider, @calls, @successes, @errors, @total_latency_ms, @consecutive_failures, @last_status,
      @last_error, @last_latency_ms, @last_checked, @last_success, @last_failure)
    ${HEALTH_ON_CONFLICT}`;

/** The raw observations' rows (multi-row INSERTs: src/store/rollups.ts RowsInsert). */
const HISTORY_INSERT = new RowsInsert('insert into model_health_history (gateway, model, ts, ok, status, latency_ms, source)', 7);

/** A flush of health observations on SQLite, as prepared statements in the group commit (PostgreSQL's: src/store/pg-records.ts). */
function writeHealthSqlite(batch: SqliteWriteBatch, folds: HealthFold[], observations: HealthObservation[]): void {
  const upsert = batch.statement(HEALTH_UPSERT_SQLITE);
  for (const f of folds) {
    upsert.run({
      gateway: f.gateway, model: f.model, provider: f.provider, calls: f.calls, successes: f.successes, errors: f.errors,
      total_latency_ms: f.total_latency_ms, consecutive_failures: f.consecutive_failures, last_status: f.last_status,
      last_error: f.last_error, last_latency_ms: f.last_latency_ms, last_checked: f.last_checked,
      last_success: f.last_success, last_failure: f.last_failure,
    });
  }
  const history: unknown[] = [];
  for (const o of observations) history.push(o.gateway, o.model, o.ts, o.ok ? 1 : 0, o.status, o.latencyMs, o.source);
  HISTORY_INSERT.run(batch, history);
  writeHealthBucketsSqlite(batch, healthBucketDeltas(observations));
}
