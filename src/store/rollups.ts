/**
 * Rollups kept beside the raw rows (migration 0002): the hourly and daily usage rollup, the per-scope "last seen" of key
 * owners, and the 5-minute health buckets. Each batch of raw rows is folded into deltas here (one upsert per
 * key, keys sorted so concurrent PostgreSQL writers lock rows in one order and never deadlock) and written in
 * the raw rows' transaction, so a reader never sees one without the other. `rebuild*` recompute them from the
 * raw rows with the same definitions in SQL (used by the migration and by bulk seeding).
 */
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { Database, ModelHealthBucketsTable, UsageRollupTable, UsageUserSeenTable } from './schema.js';
import type { UsageRecord } from './usage.js';
import type { HealthObservation } from './health.js';
import type { SqliteWriteBatch } from './sqlite-batch.js';
import { KeyedRows } from './keyed-rows.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const GRAINS = [['hour', HOUR_MS], ['day', DAY_MS]] as const;
/** Health bucket width: uptime is counted in 5-minute buckets. */
export const BUCKET_MS = 300_000;

type Db = Kysely<Database> | Transaction<Database>;

/** The statuses a request can fail with; `cancelled` (the client went away) is neither success nor failure. */
export const FAILURE_STATUSES = ['error', 'timeout', 'rate_limited'] as const;

/** Completion tokens per second of one successful request, or null when it generated nothing measurable. */
export function tokensPerSecond(r: { status: string; completion_tokens?: number; latency_ms?: number; ttft_ms?: number | null }): number | null {
  const gen = (r.latency_ms ?? 0) - (r.ttft_ms ?? 0);
  const ct = r.completion_tokens ?? 0;
  return r.status === 'success' && ct > 0 && gen > 0 ? (ct * 1000) / gen : null;
}

/**
 * One raw usage row projected to the rollup's columns: the same definitions as usageDeltas, in SQL, so a
 * statistic over "rollup hours + raw edge rows" equals the same statistic over raw rows only.
 */
export const RAW_FACT_COLUMNS: RawBuilder<unknown> = sql`gateway, provider, model,
  1 as requests,
  case when status = 'success' then 1 else 0 end as successes,
  case when status in ('error', 'timeout', 'rate_limited') then 1 else 0 end as failures,
  prompt_tokens, completion_tokens, cost_nano,
  case when status = 'success' then latency_ms else 0 end as latency_sum,
  case when status = 'success' and ttft_ms is not null then ttft_ms else 0 end as ttft_sum,
  case when status = 'success' and ttft_ms is not null then 1 else 0 end as ttft_n,
  case when status = 'success' and completion_tokens > 0 and latency_ms - coalesce(ttft_ms, 0) > 0
    then cast(completion_tokens * 1000.0 / (latency_ms - coalesce(ttft_ms, 0)) as double precision) else 0 end as tps_sum,
  case when status = 'success' and completion_tokens > 0 and latency_ms - coalesce(ttft_ms, 0) > 0 then 1 else 0 end as tps_n`;

export const SUM_COLUMNS = ['requests', 'successes', 'failures', 'prompt_tokens', 'completion_tokens', 'cost_nano', 'latency_sum',
  'ttft_sum', 'ttft_n', 'tps_sum', 'tps_n'] as const;

function addTo(row: UsageRollupTable, r: UsageRecord): void {
  const ok = r.status === 'success';
  row.requests += 1;
  row.successes += ok ? 1 : 0;
  row.failures += (FAILURE_STATUSES as readonly string[]).includes(r.status) ? 1 : 0;
  row.prompt_tokens += r.prompt_tokens ?? 0;
  row.completion_tokens += r.completion_tokens ?? 0;
  row.cost_nano += r.cost_nano ?? 0;
  if (ok) row.latency_sum += r.latency_ms ?? 0;
  if (ok && r.ttft_ms != null) { row.ttft_sum += r.ttft_ms; row.ttft_n += 1; }
  const tps = tokensPerSecond(r);
  if (tps !== null) { row.tps_sum += tps; row.tps_n += 1; }
}

export function usageDeltas(records: UsageRecord[]): { rollup: UsageRollupTable[]; seen: UsageUserSeenTable[] } {
  // rows found by their key's parts (src/store/keyed-rows.ts), sorted by the key as a string
  const rollup = new KeyedRows<UsageRollupTable>();
  const seen = new KeyedRows<UsageUserSeenTable>();
  for (const r of records) {
    for (const [grain, span] of GRAINS) {
      const period = r.created_at - (r.created_at % span);
      const parts = [grain, period, r.gateway, r.provider, r.model];
      const row = rollup.get(parts) ?? rollup.add(parts, { grain, period, gateway: r.gateway, provider: r.provider, model: r.model,
        requests: 0, successes: 0, failures: 0, prompt_tokens: 0, completion_tokens: 0, cost_nano: 0, latency_sum: 0, ttft_sum: 0,
        ttft_n: 0, tps_sum: 0, tps_n: 0 });
      addTo(row, r);
    }
    if (r.user_id == null) continue;
    for (const [g, m] of [['', ''], [r.gateway, ''], ['', r.model], [r.gateway, r.model]]) {
      const parts = [g, m, r.user_id];
      const s = seen.get(parts);
      if (!s) seen.add(parts, { scope_gateway: g, scope_model: m, user_id: r.user_id, last_at: r.created_at });
      else if (r.created_at > s.last_at) s.last_at = r.created_at;
    }
  }
  return { rollup: rollup.sorted(), seen: seen.sorted() };
}

export const USAGE_COLUMNS = ['request_id', 'user_id', 'key_id', 'endpoint', 'gateway', 'provider', 'model', 'status', 'error_class', 'http_status',
  'prompt_tokens', 'completion_tokens', 'cached_tokens', 'cost_nano', 'latency_ms', 'ttft_ms', 'created_at'] as const;
export const ROLLUP_KEY = ['grain', 'period', 'gateway', 'provider', 'model'] as const;
const marks = (n: number) => Array(n).fill('?').join(', ');

/** The upserts' conflict rules, one text for both databases (SQLite's prepared statements, src/store/pg-records.ts). */
export const ROLLUP_ON_CONFLICT = `on conflict (${ROLLUP_KEY.join(', ')}) do update set ${SUM_COLUMNS.map((c) => `${c} = usage_rollup.${c} + excluded.${c}`).join(', ')}`;
export const SEEN_ON_CONFLICT = `on conflict (scope_gateway, scope_model, user_id) do update set
  last_at = case when excluded.last_at > usage_user_seen.last_at then excluded.last_at else usage_user_seen.last_at end`;
export const BUCKETS_ON_CONFLICT = `on conflict (gateway, model, bucket) do update set calls = model_health_buckets.calls + excluded.calls,
  successes = model_health_buckets.successes + excluded.successes, latency_sum = model_health_buckets.latency_sum + excluded.latency_sum,
  latency_n = model_health_buckets.latency_n + excluded.latency_n`;

/** The row counts of RowsInsert's statements, largest first. */
const ROW_CHUNKS = [64, 16, 4, 1] as const;

/**
 * Raw rows inserted on SQLite with multi-row INSERTs, each a prepared statement made once: chunks of 64, 16, 4 and 1
 * rows. Every statement run costs better-sqlite3 the same whatever it inserts: the call into C++, the VDBE program's
 * start and end, its cursors opened and closed, usage_records' AUTOINCREMENT counter, and a result object with two
 * properties set through V8's API (~3,300 instructions: docs/PERFORMANCE.md, session 34); SQLite's work per row is
 * the same either way.
 * Values are passed as arguments (spread), not as an array: better-sqlite3 reads an array's elements through V8's
 * API one by one (~430 instructions each: session 31).
 */
export class RowsInsert {
  private readonly texts: string[];

  /** `head`: `insert into <table> (<columns>)`, `width` columns. */
  constructor(head: string, private readonly width: number) {
    const row = `(${marks(width)})`;
    this.texts = ROW_CHUNKS.map((n) => `${head} values ${Array(n).fill(row).join(', ')}`);
  }

  /** Inserts the rows whose values `values` holds one row after another (`width` each), in that order. */
  run(batch: SqliteWriteBatch, values: unknown[]): void {
    const w = this.width;
    const rows = values.length / w;
    let at = 0;
    for (let c = 0; c < ROW_CHUNKS.length && at < rows; c++) {
      const n = ROW_CHUNKS[c];
      if (rows - at < n) continue;
      const statement = batch.statement(this.texts[c]);
      for (; rows - at >= n; at += n) statement.run(...values.slice(at * w, (at + n) * w));
    }
  }
}

/** The usage rows' values in USAGE_COLUMNS' order, one row after another. */
function usageValues(records: UsageRecord[]): unknown[] {
  const v: unknown[] = [];
  for (const r of records) {
    v.push(r.request_id, r.user_id ?? null, r.key_id ?? null, r.endpoint, r.gateway, r.provider, r.model, r.status,
      r.error_class ?? null, r.http_status ?? null, r.prompt_tokens ?? null, r.completion_tokens ?? null, r.cached_tokens ?? null,
      r.cost_nano ?? null, r.latency_ms ?? null, r.ttft_ms ?? null, r.created_at);
  }
  return v;
}

/**
 * A flush of usage records on SQLite: the rows (multi-row INSERTs, RowsInsert), the rollup and the last-seen upserts
 * (one statement run per row: a flush has few), as prepared statements in the group commit: no SQL is built per
 * batch, nothing is re-prepared. PostgreSQL's is set-based: src/store/pg-records.ts.
 */
export function writeUsageSqlite(batch: SqliteWriteBatch, records: UsageRecord[], d: { rollup: UsageRollupTable[]; seen: UsageUserSeenTable[] }): void {
  USAGE_INSERT.run(batch, usageValues(records));
  // values as arguments in ROLLUP_COLUMNS' order, as RowsInsert's (above)
  const rollup = batch.statement(SQLITE_TEXTS.rollup);
  for (const w of d.rollup) {
    rollup.run(w.grain, w.period, w.gateway, w.provider, w.model, w.requests, w.successes, w.failures, w.prompt_tokens,
      w.completion_tokens, w.cost_nano, w.latency_sum, w.ttft_sum, w.ttft_n, w.tps_sum, w.tps_n);
  }
  const seen = batch.statement(SQLITE_TEXTS.seen);
  for (const s of d.seen) seen.run(s.scope_gateway, s.scope_model, s.user_id, s.last_at);
}

const ROLLUP_COLUMNS = [...ROLLUP_KEY, ...SUM_COLUMNS] as const;
/**
 * The flushes' SQL texts, made once: a text built per flush is a new string, hashed and compared in full to find its
 * prepared statement (src/store/sqlite-batch.ts `statement`).
 */
const SQLITE_TEXTS = {
  rollup: `insert into usage_rollup (${ROLLUP_COLUMNS.join(', ')}) values (${marks(ROLLUP_COLUMNS.length)})
    ${ROLLUP_ON_CONFLICT}`,
  seen: `insert into usage_user_seen (scope_gateway, scope_model, user_id, last_at) values (?, ?, ?, ?)
    ${SEEN_ON_CONFLICT}`,
  buckets: `insert into model_health_buckets (gateway, model, bucket, calls, successes, latency_sum, latency_n) values (?, ?, ?, ?, ?, ?, ?)
    ${BUCKETS_ON_CONFLICT}`,
};

const USAGE_INSERT = new RowsInsert(`insert into usage_records (${USAGE_COLUMNS.join(', ')})`, USAGE_COLUMNS.length);

/** The 5-minute health buckets' upsert for SQLite's group commit. */
export function writeHealthBucketsSqlite(batch: SqliteWriteBatch, rows: ModelHealthBucketsTable[]): void {
  const up = batch.statement(SQLITE_TEXTS.buckets);
  for (const b of rows) up.run(b.gateway, b.model, b.bucket, b.calls, b.successes, b.latency_sum, b.latency_n);
}

/** Recomputes the usage rollups from usage_records (the migration's backfill; bulk loads). */
export async function rebuildUsageRollups(db: Db): Promise<void> {
  await sql`delete from usage_rollup`.execute(db);
  await sql`delete from usage_user_seen`.execute(db);
  for (const [grain, span] of GRAINS) {
    await sql`insert into usage_rollup (grain, period, gateway, provider, model, ${sql.raw(SUM_COLUMNS.join(', '))})
      select ${sql.lit(grain)}, created_at - (created_at % ${sql.lit(span)}), gateway, provider, model,
        ${sql.raw(SUM_COLUMNS.map((c) => `sum(${c})`).join(', '))}
      from (select created_at, ${RAW_FACT_COLUMNS} from usage_records) f
      group by created_at - (created_at % ${sql.lit(span)}), gateway, provider, model`.execute(db);
  }
  // (select-list scope, the columns it groups by): PostgreSQL refuses constants in GROUP BY
  const scopes: Array<[RawBuilder<unknown>, RawBuilder<unknown>]> = [
    [sql`'', ''`, sql``], [sql`gateway, ''`, sql`gateway, `], [sql`'', model`, sql`model, `], [sql`gateway, model`, sql`gateway, model, `],
  ];
  for (const [cols, groupBy] of scopes) {
    await sql`insert into usage_user_seen (scope_gateway, scope_model, user_id, last_at)
      select ${cols}, user_id, max(created_at) from usage_records where user_id is not null
      group by ${groupBy}user_id`.execute(db);
  }
}

export function healthBucketDeltas(batch: HealthObservation[]): ModelHealthBucketsTable[] {
  const out = new KeyedRows<ModelHealthBucketsTable>();
  for (const o of batch) {
    const bucket = o.ts - (o.ts % BUCKET_MS);
    const parts = [o.gateway, o.model, bucket];
    const b = out.get(parts) ?? out.add(parts, { gateway: o.gateway, model: o.model, bucket, calls: 0, successes: 0, latency_sum: 0, latency_n: 0 });
    b.calls += 1;
    b.successes += o.ok ? 1 : 0;
    if (o.latencyMs != null) { b.latency_sum += o.latencyMs; b.latency_n += 1; }
  }
  return out.sorted();
}

export async function rebuildHealthBuckets(db: Db): Promise<void> {
  await sql`delete from model_health_buckets`.execute(db);
  await sql`insert into model_health_buckets (gateway, model, bucket, calls, successes, latency_sum, latency_n)
    select gateway, model, ts - (ts % ${sql.lit(BUCKET_MS)}), count(*), sum(ok), coalesce(sum(latency_ms), 0), count(latency_ms)
    from model_health_history group by gateway, model, ts - (ts % ${sql.lit(BUCKET_MS)})`.execute(db);
}
