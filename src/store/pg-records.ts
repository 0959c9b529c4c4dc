/**
 * The recorder's flushes on PostgreSQL as set-based named statements: a flush of usage records is one transaction of
 * three statements (the rows, the rollup upsert, the last-seen upsert), a flush of health observations one of three
 * (the per-model counters, the history rows, the bucket upsert), whatever their number. Each statement takes one
 * array per column and reads it with `unnest … with ordinality` (rows applied in the order given), so its SQL text
 * never changes: the server parses and plans it once per connection, where Kysely's multi-row `values` wrote a new
 * text for every batch size (and the health counters took one statement per model). The conflict rules are the
 * SQLite statements' own texts (rollups.ts, health.ts); the rows to upsert come folded per key, so no statement
 * touches a row twice.
 */
import type pg from 'pg';
import type { UsageRecord } from './usage.js';
import type { ModelHealthBucketsTable, UsageRollupTable, UsageUserSeenTable } from './schema.js';
import { HEALTH_ON_CONFLICT, type HealthFold, type HealthObservation } from './health.js';
import { BUCKETS_ON_CONFLICT, ROLLUP_KEY, ROLLUP_ON_CONFLICT, SEEN_ON_CONFLICT, SUM_COLUMNS, USAGE_COLUMNS } from './rollups.js';
import type { SqliteWriteBatch } from './sqlite-batch.js';

/** Where the recorder's flushes are written: SQLite's group commit, or a PostgreSQL pool (these statements). */
export type RecordWriter = { batch: SqliteWriteBatch } | { pool: pg.Pool };

type Columns = ReadonlyArray<readonly [string, string]>;

/** `cols` of `rows`, one array per column, in row order. */
function columns(rows: readonly object[], cols: Columns): unknown[][] {
  return cols.map(([c]) => rows.map((r) => (r as Record<string, unknown>)[c] ?? null));
}

/** `insert into <table> (<cols>) select … from unnest($1::t1[], …) with ordinality as v(<cols>, n) order by n` */
function insertSelect(table: string, cols: Columns): string {
  const names = cols.map(([c]) => c).join(', ');
  const arrays = cols.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ');
  return `insert into ${table} (${names}) select ${names} from unnest(${arrays}) with ordinality as v(${names}, n) order by n`;
}

/** PostgreSQL's type of each usage_records column (the columns and their order: rollups.ts USAGE_COLUMNS). */
const USAGE_TYPES: Record<(typeof USAGE_COLUMNS)[number], string> = {
  request_id: 'text', user_id: 'bigint', key_id: 'bigint', endpoint: 'text', gateway: 'text', provider: 'text', model: 'text',
  status: 'text', error_class: 'text', http_status: 'integer', prompt_tokens: 'integer', completion_tokens: 'integer',
  cached_tokens: 'integer', cost_nano: 'bigint', latency_ms: 'integer', ttft_ms: 'integer', created_at: 'bigint',
};
const USAGE_COLS = USAGE_COLUMNS.map((c) => [c, USAGE_TYPES[c]] as const);
const ROLLUP_COLS = [...ROLLUP_KEY.map((c) => [c, c === 'period' ? 'bigint' : 'text'] as const),
  ...SUM_COLUMNS.map((c) => [c, c === 'tps_sum' ? 'double precision' : 'bigint'] as const)];
const SEEN_COLS = [['scope_gateway', 'text'], ['scope_model', 'text'], ['user_id', 'bigint'], ['last_at', 'bigint']] as const;
const HEALTH_COLS = [['gateway', 'text'], ['model', 'text'], ['provider', 'text'], ['calls', 'bigint'], ['successes', 'bigint'],
  ['errors', 'bigint'], ['total_latency_ms', 'bigint'], ['consecutive_failures', 'integer'], ['last_status', 'text'],
  ['last_error', 'text'], ['last_latency_ms', 'integer'], ['last_checked', 'bigint'], ['last_success', 'bigint'],
  ['last_failure', 'bigint']] as const;
const HISTORY_COLS = [['gateway', 'text'], ['model', 'text'], ['ts', 'bigint'], ['ok', 'integer'], ['status', 'text'],
  ['latency_ms', 'integer'], ['source', 'text']] as const;
const BUCKET_COLS = [['gateway', 'text'], ['model', 'text'], ['bucket', 'bigint'], ['calls', 'bigint'], ['successes', 'bigint'],
  ['latency_sum', 'bigint'], ['latency_n', 'bigint']] as const;

// the conflict rules are the SQLite statements' own (rollups.ts, health.ts)
const USAGE_INSERT = insertSelect('usage_records', USAGE_COLS);
const ROLLUP_UPSERT = `${insertSelect('usage_rollup', ROLLUP_COLS)} ${ROLLUP_ON_CONFLICT}`;
const SEEN_UPSERT = `${insertSelect('usage_user_seen', SEEN_COLS)} ${SEEN_ON_CONFLICT}`;
const HEALTH_UPSERT = `${insertSelect('model_health', HEALTH_COLS)} ${HEALTH_ON_CONFLICT}`;
const HISTORY_INSERT = insertSelect('model_health_history', HISTORY_COLS);
const BUCKET_UPSERT = `${insertSelect('model_health_buckets', BUCKET_COLS)} ${BUCKETS_ON_CONFLICT}`;

interface Statement { name: string; text: string; rows: readonly object[]; cols: Columns }

/** Runs `statements` (those with rows) in one transaction on a pooled connection. */
async function inTransaction(pool: pg.Pool, statements: Statement[]): Promise<void> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('begin');
    for (const s of statements) if (s.rows.length) await client.query({ name: s.name, text: s.text, values: columns(s.rows, s.cols) });
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
    { name: 'gw_usage_insert', text: USAGE_INSERT, rows: records, cols: USAGE_COLS },
    { name: 'gw_usage_rollup', text: ROLLUP_UPSERT, rows: d.rollup, cols: ROLLUP_COLS },
    { name: 'gw_usage_seen', text: SEEN_UPSERT, rows: d.seen, cols: SEEN_COLS },
  ]);
}

export function writeHealthPg(pool: pg.Pool, folds: HealthFold[], observations: HealthObservation[], buckets: ModelHealthBucketsTable[]): Promise<void> {
  const history = observations.map((o) => ({ gateway: o.gateway, model: o.model, ts: o.ts, ok: o.ok ? 1 : 0, status: o.status, latency_ms: o.latencyMs, source: o.source }));
  return inTransaction(pool, [
    { name: 'gw_health_upsert', text: HEALTH_UPSERT, rows: folds, cols: HEALTH_COLS },
    { name: 'gw_health_history', text: HISTORY_INSERT, rows: history, cols: HISTORY_COLS },
    { name: 'gw_health_buckets', text: BUCKET_UPSERT, rows: buckets, cols: BUCKET_COLS },
  ]);
}
