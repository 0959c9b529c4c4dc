/**
 * The recorder's flushes on PostgreSQL as set-based named statements: a flush of usage records is one transaction of
 * three statements (the rows, the rollup upsert, the last-seen upsert), a flush of health observations one of three
 * (the per-model counters, the history rows, the bucket upsert), whatever their number. Each statement takes one
 * array per column and reads it with `unnest … with ordinality` (rows applied in the order given), so its SQL text
 * never changes: the server parses and plans it once per connection, where Kysely's multi-row `values` wrote a new
 * text for every batch size (and the health counters took one statement per model). The same rules as the Kysely
 * writes they replace (src/store/usage.ts, health.ts, rollups.ts); the rows to upsert come folded per key, so no
 * statement touches a row twice.
 */
import type pg from 'pg';
import type { UsageRecord } from './usage.js';
import type { ModelHealthBucketsTable, UsageRollupTable, UsageUserSeenTable } from './schema.js';
import type { HealthObservation } from './health.js';

/** A model's observations of one flush folded into a counter update (health.ts `fold`). */
export interface HealthFold {
  gateway: string; model: string; provider: string;
  calls: number; successes: number; errors: number; total_latency_ms: number; consecutive_failures: number;
  last_status: string; last_error: string | null; last_latency_ms: number | null; last_checked: number;
  /** null when the batch had no success (so the stored run of failures goes on) */
  last_success: number | null;
  /** null when the batch had no failure (so the stored last error stays) */
  last_failure: number | null;
}

/** `cols` of `rows`, one array per column, in row order. */
function columns<T>(rows: readonly T[], cols: readonly (keyof T)[]): unknown[][] {
  return cols.map((c) => rows.map((r) => (r[c] ?? null) as unknown));
}

/** `insert into <table> (<cols>) select … from unnest($1::t1[], …) with ordinality as v(<cols>, n) order by n` */
function insertSelect(table: string, cols: ReadonlyArray<readonly [string, string]>): string {
  const names = cols.map(([c]) => c).join(', ');
  const arrays = cols.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ');
  return `insert into ${table} (${names}) select ${names} from unnest(${arrays}) with ordinality as v(${names}, n) order by n`;
}

const USAGE_COLS = [['request_id', 'text'], ['user_id', 'bigint'], ['key_id', 'bigint'], ['endpoint', 'text'], ['gateway', 'text'],
  ['provider', 'text'], ['model', 'text'], ['status', 'text'], ['error_class', 'text'], ['http_status', 'integer'],
  ['prompt_tokens', 'integer'], ['completion_tokens', 'integer'], ['cached_tokens', 'integer'], ['cost_nano', 'bigint'],
  ['latency_ms', 'integer'], ['ttft_ms', 'integer'], ['created_at', 'bigint']] as const;
const ROLLUP_KEY = ['grain', 'period', 'gateway', 'provider', 'model'] as const;
const ROLLUP_SUMS = ['requests', 'successes', 'failures', 'prompt_tokens', 'completion_tokens', 'cost_nano', 'latency_sum',
  'ttft_sum', 'ttft_n', 'tps_sum', 'tps_n'] as const;
const ROLLUP_COLS = [['grain', 'text'], ['period', 'bigint'], ['gateway', 'text'], ['provider', 'text'], ['model', 'text'],
  ...ROLLUP_SUMS.map((c) => [c, c === 'tps_sum' ? 'double precision' : 'bigint'] as const)] as const;
const SEEN_COLS = [['scope_gateway', 'text'], ['scope_model', 'text'], ['user_id', 'bigint'], ['last_at', 'bigint']] as const;

const USAGE_INSERT = insertSelect('usage_records', USAGE_COLS);
const ROLLUP_UPSERT = `${insertSelect('usage_rollup', ROLLUP_COLS)}
  on conflict (${ROLLUP_KEY.join(', ')}) do update set ${ROLLUP_SUMS.map((c) => `${c} = usage_rollup.${c} + excluded.${c}`).join(', ')}`;
const SEEN_UPSERT = `${insertSelect('usage_user_seen', SEEN_COLS)}
  on conflict (scope_gateway, scope_model, user_id) do update set
    last_at = case when excluded.last_at > usage_user_seen.last_at then excluded.last_at else usage_user_seen.last_at end`;

const HEALTH_COLS = [['gateway', 'text'], ['model', 'text'], ['provider', 'text'], ['calls', 'bigint'], ['successes', 'bigint'],
  ['errors', 'bigint'], ['total_latency_ms', 'bigint'], ['consecutive_failures', 'integer'], ['last_status', 'text'],
  ['last_error', 'text'], ['last_latency_ms', 'integer'], ['last_checked', 'bigint'], ['last_success', 'bigint'],
  ['last_failure', 'bigint']] as const;
// A batch with a success has a last_success, one with a failure a last_failure: `excluded` says which it had.
const HEALTH_UPSERT = `${insertSelect('model_health', HEALTH_COLS)}
  on conflict (gateway, model) do update set
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
const HISTORY_COLS = [['gateway', 'text'], ['model', 'text'], ['ts', 'bigint'], ['ok', 'integer'], ['status', 'text'],
  ['latency_ms', 'integer'], ['source', 'text']] as const;
const HISTORY_INSERT = insertSelect('model_health_history', HISTORY_COLS);
const BUCKET_COLS = [['gateway', 'text'], ['model', 'text'], ['bucket', 'bigint'], ['calls', 'bigint'], ['successes', 'bigint'],
  ['latency_sum', 'bigint'], ['latency_n', 'bigint']] as const;
const BUCKET_UPSERT = `${insertSelect('model_health_buckets', BUCKET_COLS)}
  on conflict (gateway, model, bucket) do update set calls = model_health_buckets.calls + excluded.calls,
    successes = model_health_buckets.successes + excluded.successes, latency_sum = model_health_buckets.latency_sum + excluded.latency_sum,
    latency_n = model_health_buckets.latency_n + excluded.latency_n`;

const names = <T extends ReadonlyArray<readonly [string, string]>>(cols: T) => cols.map(([c]) => c);

/** Runs `statements` (name, text, values; empty ones skipped) in one transaction on a pooled connection. */
async function inTransaction(pool: pg.Pool, statements: Array<{ name: string; text: string; values: unknown[][]; rows: number }>): Promise<void> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('begin');
    for (const s of statements) if (s.rows) await client.query({ name: s.name, text: s.text, values: s.values });
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => { broken = true; });
    throw err;
  } finally {
    client.release(broken);
  }
}

export function writeUsagePg(pool: pg.Pool, records: UsageRecord[], d: { rollup: UsageRollupTable[]; seen: UsageUserSeenTable[] }): Promise<void> {
  return inTransaction(pool, [
    { name: 'gw_usage_insert', text: USAGE_INSERT, values: columns(records as Array<Record<string, unknown>>, names(USAGE_COLS)), rows: records.length },
    { name: 'gw_usage_rollup', text: ROLLUP_UPSERT, values: columns(d.rollup as unknown as Array<Record<string, unknown>>, names(ROLLUP_COLS)), rows: d.rollup.length },
    { name: 'gw_usage_seen', text: SEEN_UPSERT, values: columns(d.seen as unknown as Array<Record<string, unknown>>, names(SEEN_COLS)), rows: d.seen.length },
  ]);
}

export function writeHealthPg(pool: pg.Pool, folds: HealthFold[], observations: HealthObservation[], buckets: ModelHealthBucketsTable[]): Promise<void> {
  const history = observations.map((o) => ({ gateway: o.gateway, model: o.model, ts: o.ts, ok: o.ok ? 1 : 0, status: o.status, latency_ms: o.latencyMs, source: o.source }));
  return inTransaction(pool, [
    { name: 'gw_health_upsert', text: HEALTH_UPSERT, values: columns(folds as unknown as Array<Record<string, unknown>>, names(HEALTH_COLS)), rows: folds.length },
    { name: 'gw_health_history', text: HISTORY_INSERT, values: columns(history as Array<Record<string, unknown>>, names(HISTORY_COLS)), rows: history.length },
    { name: 'gw_health_buckets', text: BUCKET_UPSERT, values: columns(buckets as unknown as Array<Record<string, unknown>>, names(BUCKET_COLS)), rows: buckets.length },
  ]);
}
