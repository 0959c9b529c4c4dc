/**
 * Model health records in SQL: one row per tracked (gateway, model) with its 24 h counters and uptime (from the
 * 5-minute buckets), the figures of its last 50 calls (from the history, by a backward index scan of at most 50
 * rows each) and the derived `status` and `tier`. The rules are the spec's (`ModelHealthRecord`); this file is
 * their only implementation. Windows are whole 5-minute buckets: "the last 24 h" is the current bucket and the
 * 287 before it.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../store/schema.js';
import { BUCKET_MS } from '../store/rollups.js';

export const HEALTH_WINDOW_CALLS = 50;
/** Status thresholds, written in the spec: success rate < 0.8 → unhealthy; ≥ 0.95 (and more) → healthy. */
export const UNHEALTHY_BELOW = 0.8;
export const HEALTHY_FROM = 0.95;
export const HEALTHY_MAX_MEDIAN_MS = 10_000;
export const HOT_CALLS_24H = 100;

export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy' | 'unknown';
export type Tier = 'hot' | 'warm' | 'cold';

/** Start of the window of `buckets` 5-minute buckets that ends with the bucket holding `now`. */
export function bucketWindowStart(now: number, buckets: number): number {
  return now - (now % BUCKET_MS) - (buckets - 1) * BUCKET_MS;
}

export const windows = (now: number) => ({
  h24: bucketWindowStart(now, 288),
  d7: bucketWindowStart(now, 7 * 288),
  d30: bucketWindowStart(now, 30 * 288),
});

export interface RecordRow {
  gateway: string;
  model: string;
  provider: string;
  status: HealthStatus;
  tier: Tier;
  last_status: string | null;
  last_error: string | null;
  last_latency_ms: number | null;
  last_checked: number;
  last_success: number | null;
  last_failure: number | null;
  calls24: number;
  ok24: number;
  latency_sum24: number;
  latency_n24: number;
  buckets24: number;
  up_buckets24: number;
}

export interface RecordQuery {
  provider?: string | null;
  gateway?: string | null;
  models?: string[];
  lastStatus?: string | null;
  status?: string | null;
  tier?: string | null;
  /** error_count ÷ total_requests at least this, with at least minCalls calls (unhealthy list). */
  errorRate?: { threshold: number; minCalls: number };
  order?: 'key' | 'error_rate';
  limit?: number;
  offset?: number;
}

/** The last N calls of the outer row's (gateway, model) inside the 24 h window, newest first. */
const lastCalls = (n: number, since: number, cols: RawBuilder<unknown>) => sql`(select ${cols} from model_health_history h
  where h.gateway = mh.gateway and h.model = mh.model and h.ts >= ${since} order by h.ts desc, h.id desc limit ${sql.lit(n)})`;

/** Filters on stored columns, applied inside (so a few models cost a few models' rows, not every model's). */
interface PreFilter {
  provider?: string | null;
  gateway?: string | null;
  models?: string[];
}

function preConditions(f: PreFilter, alias: string): RawBuilder<unknown> {
  const c: RawBuilder<unknown>[] = [];
  const col = (name: string) => sql.ref(`${alias}.${name}`);
  if (f.provider != null) {
    c.push(alias === 'mh' ? sql`mh.provider = ${f.provider}`
      : sql`exists (select 1 from model_health p where p.gateway = ${col('gateway')} and p.model = ${col('model')} and p.provider = ${f.provider})`);
  }
  if (f.gateway != null) c.push(sql`${col('gateway')} = ${f.gateway}`);
  if (f.models) c.push(f.models.length ? sql`${col('model')} in (${sql.join(f.models)})` : sql`1 = 0`);
  return c.length ? sql.join(c, sql` and `) : sql`1 = 1`;
}

function recordsSql(now: number, pre: PreFilter): RawBuilder<unknown> {
  const w = windows(now);
  const n = HEALTH_WINDOW_CALLS;
  return sql`select r.*,
      case when r.n50 = 0 then 'unknown'
           when r.s50 * 5 < r.n50 * 4 or r.f3 >= 3 then 'unhealthy'
           when r.s50 * 100 >= r.n50 * 95 and r.last_ok = 1 and r.med50 <= ${sql.lit(HEALTHY_MAX_MEDIAN_MS)} then 'healthy'
           else 'degraded' end as status,
      case when r.calls24 >= ${sql.lit(HOT_CALLS_24H)} then 'hot' when r.any7 = 1 then 'warm' else 'cold' end as tier
    from (
      select mh.gateway, mh.model, mh.provider, mh.last_status, mh.last_error, mh.last_latency_ms, mh.last_checked,
        mh.last_success, mh.last_failure,
        coalesce(b.calls, 0) as calls24, coalesce(b.successes, 0) as ok24, coalesce(b.latency_sum, 0) as latency_sum24,
        coalesce(b.latency_n, 0) as latency_n24, coalesce(b.buckets, 0) as buckets24, coalesce(b.up_buckets, 0) as up_buckets24,
        (select count(*) from ${lastCalls(n, w.h24, sql`h.ok`)} x) as n50,
        (select coalesce(sum(x.ok), 0) from ${lastCalls(n, w.h24, sql`h.ok`)} x) as s50,
        (select count(*) from ${lastCalls(3, w.h24, sql`h.ok`)} x where x.ok = 0) as f3,
        (select x.ok from ${lastCalls(1, w.h24, sql`h.ok`)} x) as last_ok,
        (select m.latency_ms from (
            select x.latency_ms, row_number() over (order by x.latency_ms) as rn, count(*) over () as c
            from ${lastCalls(n, w.h24, sql`h.ok, h.latency_ms`)} x where x.ok = 1 and x.latency_ms is not null
          ) m where m.rn = (m.c + 1) / 2) as med50,
        case when exists (select 1 from model_health_buckets b7 where b7.gateway = mh.gateway and b7.model = mh.model
          and b7.bucket >= ${w.d7}) then 1 else 0 end as any7
      from model_health mh
      left join (
        select gateway, model, sum(calls) as calls, sum(successes) as successes, sum(latency_sum) as latency_sum,
          sum(latency_n) as latency_n, count(*) as buckets,
          sum(case when successes * 5 >= calls * 4 then 1 else 0 end) as up_buckets
        from model_health_buckets bb where bb.bucket >= ${w.h24} and ${preConditions(pre, 'bb')} group by gateway, model
      ) b on b.gateway = mh.gateway and b.model = mh.model
      where ${preConditions(pre, 'mh')}
    ) r`;
}

const NUMERIC: Array<keyof RecordRow> = ['last_latency_ms', 'last_checked', 'last_success', 'last_failure', 'calls24', 'ok24',
  'latency_sum24', 'latency_n24', 'buckets24', 'up_buckets24'];

function toRow(r: Record<string, unknown>): RecordRow {
  const out = { ...r } as Record<string, unknown>;
  for (const k of NUMERIC) out[k] = r[k] === null || r[k] === undefined ? null : Number(r[k]);
  return out as unknown as RecordRow;
}

/** Tracked records matching `q`, sorted (provider, gateway, model) unless asked otherwise, with the total before paging. */
export async function queryRecords(db: Kysely<Database>, now: number, q: RecordQuery = {}): Promise<{ rows: RecordRow[]; total: number }> {
  const pre: PreFilter = { provider: q.provider, gateway: q.gateway, models: q.models };
  const conds: RawBuilder<unknown>[] = [];
  if (q.lastStatus != null) conds.push(sql`last_status = ${q.lastStatus}`);
  if (q.status != null) conds.push(sql`status = ${q.status}`);
  if (q.tier != null) conds.push(sql`tier = ${q.tier}`);
  if (q.errorRate) {
    // error_count / total >= threshold in integers (parts per million), so 3 of 10 meets 0.3 on both databases
    // (in floating point 0.3 * 10 is 3.0000000000000004)
    const ppm = Math.round(q.errorRate.threshold * 1_000_000);
    conds.push(sql`calls24 >= ${q.errorRate.minCalls}`, sql`(calls24 - ok24) * 1000000 >= ${ppm} * calls24`);
  }
  const where = conds.length ? sql`where ${sql.join(conds, sql` and `)}` : sql``;
  const order = q.order === 'error_rate'
    ? sql`order by (calls24 - ok24) * 1.0 / calls24 desc, calls24 desc, model asc, gateway asc`
    : sql`order by provider asc, gateway asc, model asc`;
  const page = q.limit !== undefined ? sql`limit ${q.limit} offset ${q.offset ?? 0}` : sql``;
  const { rows } = await sql<Record<string, unknown>>`select t.*, count(*) over () as total_rows
    from (${recordsSql(now, pre)}) t ${where} ${order} ${page}`.execute(db);
  let total = rows.length ? Number(rows[0].total_rows) : 0;
  if (!rows.length && (q.offset ?? 0) > 0) {
    const c = await sql<{ n: unknown }>`select count(*) as n from (${recordsSql(now, pre)}) t ${where}`.execute(db);
    total = Number(c.rows[0]?.n ?? 0);
  }
  return { rows: rows.map(toRow), total };
}
