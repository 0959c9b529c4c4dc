import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import { applyHealthBuckets, healthBucketDeltas, writeHealthBucketsSqlite } from './rollups.js';
import type { SqliteWriteBatch } from './sqlite-batch.js';
import { writeHealthPg } from './pg-records.js';
import type pg from 'pg';

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

/** A turn of the event loop: what arrived meanwhile (requests, answers) runs before the next chunk of a long job. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

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
    consecutive_failures: lastOk >= 0 ? obs.length - 1 - lastOk : obs.length, anyOk: lastOk >= 0,
    last_status: last.status, last_latency_ms: last.latencyMs, last_checked: last.ts,
    last_error: lastFail >= 0 ? obs[lastFail].error : null, anyFail: lastFail >= 0,
    last_success: lastOk >= 0 ? obs[lastOk].ts : null, last_failure: lastFail >= 0 ? obs[lastFail].ts : null,
  };
}

/**
 * Per (gateway, model) health counters, a history of observations (the last calls, for status) and 5-minute
 * buckets (24 h counters and uptime), written together in one transaction.
 */
export class HealthRepo {
  /**
   * `batch` on SQLite: the recorder's flush joins the group commit with prepared statements; `pool` on PostgreSQL:
   * it is three named set-based statements (src/store/pg-records.ts).
   */
  constructor(private readonly db: Kysely<Database>, private readonly batch?: SqliteWriteBatch, private readonly pool?: pg.Pool) {}

  /** Applies a batch of observations (the recorder batches them off the request path). */
  async record(batch: HealthObservation[]): Promise<void> {
    if (!batch.length) return;
    const byPair = new Map<string, HealthObservation[]>();
    for (const o of batch) {
      const k = `${o.gateway}\u0000${o.model}`;
      const list = byPair.get(k);
      if (list) list.push(o); else byPair.set(k, [o]);
    }
    // one upsert per pair, in key order (concurrent PostgreSQL writers then lock rows in one order)
    const folds = [...byPair.keys()].sort().map((k) => fold(byPair.get(k)!));
    const writer = this.batch;
    if (writer) return writer.run(() => writeHealthSqlite(writer, folds, batch));
    if (this.pool) return writeHealthPg(this.pool, folds, batch, healthBucketDeltas(batch));
    await this.db.transaction().execute(async (trx) => {
      for (const f of folds) {
        await trx.insertInto('model_health').values({
          gateway: f.gateway, model: f.model, provider: f.provider, calls: f.calls, successes: f.successes, errors: f.errors,
          total_latency_ms: f.total_latency_ms, consecutive_failures: f.consecutive_failures, last_status: f.last_status,
          last_error: f.last_error, last_latency_ms: f.last_latency_ms, last_checked: f.last_checked,
          last_success: f.last_success, last_failure: f.last_failure,
        }).onConflict((oc) => oc.columns(['gateway', 'model']).doUpdateSet({
          calls: sql`model_health.calls + ${f.calls}`,
          successes: sql`model_health.successes + ${f.successes}`,
          errors: sql`model_health.errors + ${f.errors}`,
          total_latency_ms: sql`model_health.total_latency_ms + ${f.total_latency_ms}`,
          consecutive_failures: f.anyOk ? f.consecutive_failures : sql`model_health.consecutive_failures + ${f.calls}`,
          last_status: f.last_status,
          last_error: f.anyFail ? f.last_error : sql`model_health.last_error`,
          last_latency_ms: f.last_latency_ms,
          last_checked: f.last_checked,
          last_success: f.anyOk ? f.last_success : sql`model_health.last_success`,
          last_failure: f.anyFail ? f.last_failure : sql`model_health.last_failure`,
        })).execute();
      }
      const rows = batch.map((o) => ({
        gateway: o.gateway, model: o.model, ts: o.ts, ok: o.ok ? 1 : 0, status: o.status, latency_ms: o.latencyMs, source: o.source,
      }));
      for (let i = 0; i < rows.length; i += 1000) await trx.insertInto('model_health_history').values(rows.slice(i, i + 1000)).execute();
      await applyHealthBuckets(trx, healthBucketDeltas(batch));
    });
  }

  async get(gateway: string, model: string) {
    return this.db.selectFrom('model_health').selectAll().where('gateway', '=', gateway).where('model', '=', model).executeTakeFirst();
  }

  async all() {
    return this.db.selectFrom('model_health').selectAll().orderBy('gateway').orderBy('model').execute();
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
  async prune(historyBefore: number, bucketsBefore: number, keepCalls = 100, chunk = 1000, stopped = () => false): Promise<{ history: number; buckets: number }> {
    let history = 0;
    const pairs = await this.db.selectFrom('model_health').select(['gateway', 'model']).execute();
    for (const { gateway, model } of pairs) {
      if (stopped()) return { history, buckets: 0 };
      const nth = await this.db.selectFrom('model_health_history').select(['ts', 'id']).where('gateway', '=', gateway).where('model', '=', model)
        .orderBy('ts', 'desc').orderBy('id', 'desc').limit(1).offset(keepCalls - 1).executeTakeFirst();
      if (!nth) continue;
      // older than the cut-off and than the last `keepCalls` (the ones after `nth` in (ts, id) order, and `nth`)
      const [kts, kid] = [Number(nth.ts), Number(nth.id)];
      while (!stopped()) {
        const r = await this.db.deleteFrom('model_health_history').where('id', 'in', (q) => q.selectFrom('model_health_history').select('id')
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
      const nth = await this.db.selectFrom('model_health_buckets').select('bucket').where('bucket', '<', bucketsBefore)
        .orderBy('bucket').limit(1).offset(chunk - 1).executeTakeFirst();
      const r = await this.db.deleteFrom('model_health_buckets')
        .where('bucket', nth ? '<=' : '<', nth ? Number(nth.bucket) : bucketsBefore).executeTakeFirst();
      buckets += Number(r.numDeletedRows);
      if (!nth) break;
      await turn();
    }
    return { history, buckets };
  }
}

/** The same writes as HealthRepo.record's transaction, as prepared statements for SQLite's group commit. */
function writeHealthSqlite(batch: SqliteWriteBatch, folds: Array<ReturnType<typeof fold>>, observations: HealthObservation[]): void {
  const upsert = batch.statement(`insert into model_health (gateway, model, provider, calls, successes, errors, total_latency_ms,
      consecutive_failures, last_status, last_error, last_latency_ms, last_checked, last_success, last_failure)
    values (@gateway, @model, @provider, @calls, @successes, @errors, @total_latency_ms, @consecutive_failures, @last_status,
      @last_error, @last_latency_ms, @last_checked, @last_success, @last_failure)
    on conflict (gateway, model) do update set
      calls = model_health.calls + excluded.calls,
      successes = model_health.successes + excluded.successes,
      errors = model_health.errors + excluded.errors,
      total_latency_ms = model_health.total_latency_ms + excluded.total_latency_ms,
      consecutive_failures = case when @any_ok then excluded.consecutive_failures else model_health.consecutive_failures + excluded.calls end,
      last_status = excluded.last_status,
      last_error = case when @any_fail then excluded.last_error else model_health.last_error end,
      last_latency_ms = excluded.last_latency_ms,
      last_checked = excluded.last_checked,
      last_success = case when @any_ok then excluded.last_success else model_health.last_success end,
      last_failure = case when @any_fail then excluded.last_failure else model_health.last_failure end`);
  for (const f of folds) {
    upsert.run({
      gateway: f.gateway, model: f.model, provider: f.provider, calls: f.calls, successes: f.successes, errors: f.errors,
      total_latency_ms: f.total_latency_ms, consecutive_failures: f.consecutive_failures, last_status: f.last_status,
      last_error: f.last_error, last_latency_ms: f.last_latency_ms, last_checked: f.last_checked,
      last_success: f.last_success, last_failure: f.last_failure, any_ok: f.anyOk ? 1 : 0, any_fail: f.anyFail ? 1 : 0,
    });
  }
  const history = batch.statement('insert into model_health_history (gateway, model, ts, ok, status, latency_ms, source) values (?, ?, ?, ?, ?, ?, ?)');
  for (const o of observations) history.run(o.gateway, o.model, o.ts, o.ok ? 1 : 0, o.status, o.latencyMs, o.source);
  writeHealthBucketsSqlite(batch, healthBucketDeltas(observations));
}
