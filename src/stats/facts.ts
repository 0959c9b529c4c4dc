/**
 * SQL building blocks of the usage statistics. `facts(window, filter)` is a derived table with one row per
 * rollup day or hour (whole periods) or raw request (partial edge hours), all in the rollup's columns, so every statistic
 * is one aggregate over it and never loads requests into memory. The same SQL runs on SQLite and PostgreSQL.
 */
import type { UsageRollupTable } from '../store/schema.js';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../store/schema.js';
import { RAW_FACT_COLUMNS } from '../store/rollups.js';
import { segments, type Window } from './window.js';

export interface FactFilter {
  gateway?: string;
  provider?: string;
}

const ROLLUP_COLUMNS = sql`gateway, provider, model, requests, successes, failures, prompt_tokens, completion_tokens, cost_nano,
  latency_sum, ttft_sum, ttft_n, tps_sum, tps_n`;

function filters(f: FactFilter): RawBuilder<unknown>[] {
  const out: RawBuilder<unknown>[] = [];
  if (f.gateway !== undefined) out.push(sql`gateway = ${f.gateway}`);
  if (f.provider !== undefined) out.push(sql`provider = ${f.provider}`);
  return out;
}

const and = (conds: RawBuilder<unknown>[]) => (conds.length ? sql.join(conds, sql` and `) : sql`1 = 1`);

/** The derived table of a window: `(select … union all select …) f`. */
export function facts(w: Window, f: FactFilter = {}): RawBuilder<unknown> {
  const parts: RawBuilder<unknown>[] = [];
  for (const s of segments(w)) {
    const conds = filters(f);
    if (s.source === 'raw') {
      conds.push(sql`created_at >= ${s.from}`, sql`created_at < ${s.to}`);
      parts.push(sql`select ${RAW_FACT_COLUMNS} from usage_records where ${and(conds)}`);
      continue;
    }
    conds.unshift(sql`grain = ${s.source}`);
    if (s.from !== null) conds.push(sql`period >= ${s.from}`);
    if (s.to !== null) conds.push(sql`period < ${s.to}`);
    parts.push(sql`select ${ROLLUP_COLUMNS} from usage_rollup where ${and(conds)}`);
  }
  if (!parts.length) parts.push(sql`select ${ROLLUP_COLUMNS} from usage_rollup where 1 = 0`);
  return sql`(${sql.join(parts, sql` union all `)}) f`;
}

/** Aggregate columns over `facts`; numeric results are converted by the caller (num()). */
export const TOTALS = sql`count(*) as fact_rows,
  coalesce(sum(requests), 0) as requests, coalesce(sum(successes), 0) as successes, coalesce(sum(failures), 0) as failures,
  coalesce(sum(prompt_tokens), 0) as prompt_tokens, coalesce(sum(completion_tokens), 0) as completion_tokens,
  coalesce(sum(cost_nano), 0) as cost_nano, coalesce(sum(latency_sum), 0) as latency_sum,
  coalesce(sum(ttft_sum), 0) as ttft_sum, coalesce(sum(ttft_n), 0) as ttft_n,
  coalesce(sum(tps_sum), 0) as tps_sum, coalesce(sum(tps_n), 0) as tps_n`;

/** The summed measures of a window: the rollup table's measure columns. */
export type Totals = Omit<UsageRollupTable, 'grain' | 'period' | 'gateway' | 'provider' | 'model'>;

const TOTAL_KEYS: Array<keyof Totals> = ['requests', 'successes', 'failures', 'prompt_tokens', 'completion_tokens', 'cost_nano',
  'latency_sum', 'ttft_sum', 'ttft_n', 'tps_sum', 'tps_n'];

/** PostgreSQL answers sums of bigint as numeric (parsed to number by the store); SQLite as integers. */
export function toTotals(row: Record<string, unknown> | undefined): Totals {
  const out = {} as Totals;
  for (const k of TOTAL_KEYS) out[k] = Number(row?.[k] ?? 0);
  return out;
}

export const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;
const ratio = (a: number, b: number, digits: number) => (b > 0 ? round(a / b, digits) : null);

/** The derived figures every statistics response shares. */
export function derived(t: Totals) {
  return {
    tokens: t.prompt_tokens + t.completion_tokens,
    cost_usd: t.cost_nano / 1e9,
    avg_latency_ms: ratio(t.latency_sum, t.successes, 2),
    avg_ttft_ms: ratio(t.ttft_sum, t.ttft_n, 2),
    avg_tps: ratio(t.tps_sum, t.tps_n, 2),
    success_rate: ratio(t.successes, t.requests, 4),
  };
}

/**
 * Percentiles are taken over at most this many successful requests: the latest of the window. Below it they
 * are exact; above it they describe the most recent traffic, and the query stays bounded on any window.
 */
export const PERCENTILE_SAMPLE = 10_000;

/**
 * Nearest-rank p50 and p95 of the latency of successful requests in `w` (value at rank ceil(p·n), computed
 * with integer arithmetic so both databases agree), over the latest PERCENTILE_SAMPLE of them. Reads the
 * covering (scope, created_at, status, latency_ms) index backwards.
 */
export async function latencyPercentiles(db: Kysely<Database>, w: Window, f: FactFilter): Promise<{ p50: number | null; p95: number | null }> {
  const conds = [...filters(f), sql`status = 'success'`];
  if (w.start !== null) conds.push(sql`created_at >= ${w.start}`);
  if (w.end !== null) conds.push(sql`created_at < ${w.end}`);
  const { rows } = await sql<{ p50: unknown; p95: unknown }>`select
      max(case when rn = (c * 50 + 99) / 100 then latency_ms end) as p50,
      max(case when rn = (c * 95 + 99) / 100 then latency_ms end) as p95
    from (
      select latency_ms, row_number() over (order by latency_ms) as rn, count(*) over () as c
      from (select latency_ms from usage_records where ${and(conds)} order by created_at desc limit ${PERCENTILE_SAMPLE}) s
    ) r`.execute(db);
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return { p50: n(rows[0]?.p50), p95: n(rows[0]?.p95) };
}

/** Distinct key owners seen in a window ending now, per scope ('' = any gateway / any model). */
export function usersSince(start: number | null): RawBuilder<unknown> {
  return start === null ? sql`1 = 1` : sql`last_at >= ${start}`;
}

export async function distinctUsers(db: Kysely<Database>, start: number | null, gateway: string, model: string): Promise<number> {
  const { rows } = await sql<{ n: unknown }>`select count(*) as n from usage_user_seen
    where scope_gateway = ${gateway} and scope_model = ${model} and ${usersSince(start)}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}
