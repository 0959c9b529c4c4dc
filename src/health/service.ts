/**
 * Model health (the `model-health` operations and `/health/summary`): records, providers and the system, from
 * the health tables the engine and the probe monitor write through the recorder. Provider and system figures
 * are aggregated from the per-model records (one row per tracked model, already aggregated in SQL).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Recorder } from '../engine/recorder.js';
import { round } from '../stats/facts.js';
import { queryRecords, windows, type RecordQuery, type RecordRow } from './records.js';
import { IncidentTracker, pairKey, type Pair } from './incidents.js';
import { pruneHealth } from '../store/health.js';
import { countStatuses, providerStatus, systemStatus, type ProviderStatus } from './rules.js';

const iso = (t: number) => new Date(t).toISOString();
const isoOrNull = (t: number | null) => (t === null ? null : iso(t));
const LAST_CALL_STATUSES = ['success', 'error', 'timeout', 'rate_limited'];
/** A model's detail shows its last calls, however old: the history keeps at least these per (gateway, model). */
const DETAIL_CALLS = 100;
/** Buckets the uptime figures read: 30 days (`windows().d30`, the status page's 30 daily bars), and a day to spare. */
const BUCKETS_KEPT_MS = 31 * 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;
/** Buckets that count as up: success rate at least 0.8, in integers. */
const UP = sql`sum(case when b.successes * 5 >= b.calls * 4 then 1 else 0 end)`;

/** The wire's last-call vocabulary; anything else an engine wrote counts as `error`. */
export const callStatus = (s: string | null) => (s === null ? null : LAST_CALL_STATUSES.includes(s) ? s : 'error');
export const uptimeOf = (r: RecordRow) => (r.buckets24 > 0 ? (100 * r.up_buckets24) / r.buckets24 : null);

/** A ModelHealthRecord as the spec writes it. */
export function recordView(r: RecordRow) {
  const up = uptimeOf(r);
  return {
    model_id: r.model, provider: r.provider, gateway: r.gateway, status: r.status, tier: r.tier,
    response_time_ms: r.last_latency_ms,
    success_rate: r.calls24 > 0 ? round(r.ok24 / r.calls24, 4) : null,
    last_checked: iso(r.last_checked), last_success: isoOrNull(r.last_success), last_failure: isoOrNull(r.last_failure),
    error_count: r.calls24 - r.ok24, total_requests: r.calls24,
    avg_response_time_ms: r.latency_n24 > 0 ? round(r.latency_sum24 / r.latency_n24, 2) : null,
    uptime_percentage: up === null ? null : round(up, 2),
    error_message: r.last_error, last_call_status: callStatus(r.last_status),
  };
}

/** Provider-level figures over some records (one provider on one gateway, or on all). */
export function aggregate(rows: RecordRow[], since24: number) {
  const counts = countStatuses(rows.map((r) => r.status));
  let calls = 0, ok = 0, latSum = 0, latN = 0, weighted = 0, weight = 0, lastChecked: number | null = null;
  let lastError: { at: number; msg: string | null } | null = null;
  for (const r of rows) {
    calls += r.calls24; ok += r.ok24; latSum += r.latency_sum24; latN += r.latency_n24;
    const up = uptimeOf(r);
    if (up !== null && r.calls24 > 0) { weighted += up * r.calls24; weight += r.calls24; }
    if (lastChecked === null || r.last_checked > lastChecked) lastChecked = r.last_checked;
    if (r.last_failure !== null && r.last_failure >= since24 && (!lastError || r.last_failure > lastError.at)) {
      lastError = { at: r.last_failure, msg: r.last_error };
    }
  }
  return {
    status: providerStatus(counts) as ProviderStatus, counts, calls, ok,
    avgLatency: latN > 0 ? round(latSum / latN, 2) : null,
    uptime: weight > 0 ? round(weighted / weight, 2) : null,
    lastChecked, errorMessage: lastError?.msg ?? null,
  };
}

export function providerView(provider: string, gateway: string, rows: RecordRow[], since24: number) {
  const a = aggregate(rows, since24);
  return {
    provider, gateway, status: a.status, total_models: rows.length, healthy_models: a.counts.healthy,
    degraded_models: a.counts.degraded, unhealthy_models: a.counts.unhealthy, avg_response_time_ms: a.avgLatency,
    overall_uptime: a.uptime, last_checked: isoOrNull(a.lastChecked), error_message: a.errorMessage,
  };
}

/** Records grouped per (provider, gateway), in (provider, gateway) order (rows arrive in that order). */
export function groupByProvider(rows: RecordRow[]): Array<{ provider: string; gateway: string; rows: RecordRow[] }> {
  const out: Array<{ provider: string; gateway: string; rows: RecordRow[] }> = [];
  for (const r of rows) {
    const last = out[out.length - 1];
    if (last && last.provider === r.provider && last.gateway === r.gateway) last.rows.push(r);
    else out.push({ provider: r.provider, gateway: r.gateway, rows: [r] });
  }
  return out;
}

export class HealthService {
  readonly incidents: IncidentTracker;
  private sweep: NodeJS.Timeout | undefined;
  private readonly running = new Set<Promise<void>>();
  private pastDays: { d0: number; at: number; rows: Record<string, unknown>[] } | undefined;
  private prunedAt = -Infinity;
  /** stop() was called: a prune in progress stops at its next chunk. */
  private stopping = false;

  constructor(
    private readonly db: Kysely<Database>,
    /** Whether the active probe monitor runs (reported in summaries). */
    readonly monitoringActive: () => boolean,
    readonly clock: () => number = Date.now,
  ) {
    this.incidents = new IncidentTracker(db, () => this.clock());
  }

  /**
   * Opens and resolves incidents after every batch of health writes, and once a minute. The same sweep prunes the
   * history and the buckets once an hour (the first sweep prunes at once), unless `historyDays` is 0.
   */
  start(recorder: Recorder, sweepMs = 60_000, historyDays = 7): void {
    recorder.onFlush((_u, h) => {
      if (!h.length) return;
      // Only a failed call can turn a pair unhealthy: a success raises its success rate over the last calls and ends
      // a run of failures. So the pairs evaluated after a batch are those with a failure in it, and `reconcile` adds
      // the pairs with an open incident, which successes may resolve. (Evaluating every pair of every batch ran the
      // records query on the event loop four times a second under load: docs/PERFORMANCE.md, session 23.)
      const failed = new Map<string, Pair>();
      for (const o of h) if (!o.ok) failed.set(pairKey(o), { gateway: o.gateway, model: o.model });
      this.track(this.incidents.reconcile([...failed.values()], true));
    });
    this.sweep ??= setInterval(() => {
      this.track(this.incidents.reconcile());
      const now = this.clock();
      if (historyDays > 0 && now - this.prunedAt >= PRUNE_EVERY_MS) {
        this.prunedAt = now;
        this.track(this.prune(historyDays).then(() => undefined));
      }
    }, sweepMs);
    this.sweep.unref();
  }

  /**
   * Deletes history rows older than `historyDays` (each model keeps its last 100 calls, which its detail shows) and
   * 5-minute buckets older than the 31 days the uptime figures read (src/store/health.ts `pruneHealth`).
   */
  prune(historyDays: number) {
    const now = this.clock();
    return pruneHealth(this.db, now - historyDays * 86_400_000, now - BUCKETS_KEPT_MS, DETAIL_CALLS, undefined, () => this.stopping);
  }

  /** Background reconciliations: a failure is retried by the next sweep; stop() waits for those running. */
  private track(p: Promise<void>): void {
    const q = p.catch(() => {}).finally(() => this.running.delete(q));
    this.running.add(q);
  }

  /** Resolves when the background reconciliations started so far have finished. */
  async settled(): Promise<void> {
    await Promise.all([...this.running]);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = undefined;
    await this.settled();
  }

  records(q: RecordQuery = {}) {
    return queryRecords(this.db, this.clock(), q);
  }

  async list(provider: string | null, lastStatus: string | null, limit: number, offset: number) {
    const { rows, total } = await this.records({ provider, lastStatus, limit, offset });
    return { models: rows.map(recordView), total, limit, offset, filters: { provider, status: lastStatus } };
  }

  /**
   * The records of one model on every gateway, the chosen one first: most calls in the last 24 h, then latest
   * last_checked. `model` may omit its `<provider>/` prefix; an exact id wins over the prefixed form.
   */
  async modelRecords(provider: string, model: string): Promise<RecordRow[]> {
    const { rows } = await this.records({ provider, models: [model, `${provider}/${model}`] });
    const exact = rows.filter((r) => r.model === model);
    const mine = exact.length ? exact : rows;
    return [...mine].sort((a, b) => b.calls24 - a.calls24 || b.last_checked - a.last_checked || (a.gateway < b.gateway ? -1 : 1));
  }

  async detail(provider: string, model: string) {
    const rows = await this.modelRecords(provider, model);
    if (!rows.length) return undefined;
    const chosen = rows[0];
    const now = this.clock();
    const [history, uptime, incidents] = await Promise.all([
      this.db.selectFrom('model_health_history').select(['ts', 'status', 'latency_ms', 'source'])
        .where('gateway', '=', chosen.gateway).where('model', '=', chosen.model)
        .orderBy('ts', 'desc').orderBy('id', 'desc').limit(DETAIL_CALLS).execute(),
      this.uptimeWindows(chosen),
      this.incidents.list(chosen, now - 30 * 86_400_000, 20),
    ]);
    return {
      model: recordView(chosen),
      gateways: [...rows].sort((a, b) => (a.gateway < b.gateway ? -1 : a.gateway > b.gateway ? 1 : 0)).map(recordView),
      history: history.map((h) => ({
        timestamp: iso(Number(h.ts)), status: callStatus(h.status)!, response_time_ms: h.latency_ms === null ? null : Number(h.latency_ms),
        source: h.source === 'probe' ? 'probe' : 'passive',
      })),
      uptime,
      incidents,
    };
  }

  /** Uptime over 24 h, 7 d and 30 d by the 5-minute-bucket rule. */
  async uptimeWindows(pair: { gateway: string; model: string }) {
    const w = windows(this.clock());
    const { rows } = await sql<Record<string, unknown>>`select
        sum(case when bucket >= ${w.h24} then 1 else 0 end) as b24,
        sum(case when bucket >= ${w.h24} and successes * 5 >= calls * 4 then 1 else 0 end) as u24,
        sum(case when bucket >= ${w.d7} then 1 else 0 end) as b7,
        sum(case when bucket >= ${w.d7} and successes * 5 >= calls * 4 then 1 else 0 end) as u7,
        count(*) as b30, sum(case when successes * 5 >= calls * 4 then 1 else 0 end) as u30
      from model_health_buckets where gateway = ${pair.gateway} and model = ${pair.model} and bucket >= ${w.d30}`.execute(this.db);
    const r = rows[0] ?? {};
    const pct = (u: unknown, b: unknown) => (Number(b ?? 0) > 0 ? round((100 * Number(u)) / Number(b), 2) : null);
    return { h24: pct(r.u24, r.b24), d7: pct(r.u7, r.b7), d30: pct(r.u30, r.b30) };
  }

  /**
   * Uptime bars for the status page by the 5-minute-bucket rule: per model the last 24 hours (index 23 = the
   * current hour), per (provider, gateway) the last 30 UTC days (index 29 = today). null = no calls. Finished
   * days change only by late writes, so their bars are kept for 10 minutes; today's is always recomputed.
   */
  async uptimeBars(): Promise<{ hourly: Map<string, Array<number | null>>; daily: Map<string, Array<number | null>> }> {
    const now = this.clock();
    const h0 = now - (now % 3_600_000) - 23 * 3_600_000;
    const today = now - (now % 86_400_000);
    const d0 = today - 29 * 86_400_000;
    if (!this.pastDays || this.pastDays.d0 !== d0 || now - this.pastDays.at > 600_000) {
      this.pastDays = { d0, at: now, rows: (await this.dailyBars(d0, d0, today)).rows };
    }
    const [hours, days] = await Promise.all([
      // the bounds are literals: PostgreSQL matches a GROUP BY expression to the select list only without parameters
      sql<Record<string, unknown>>`select b.gateway, b.model, (b.bucket - ${sql.lit(h0)}) / 3600000 as idx, count(*) as n, ${UP} as u
        from model_health_buckets b where b.bucket >= ${sql.lit(h0)}
        group by b.gateway, b.model, (b.bucket - ${sql.lit(h0)}) / 3600000`.execute(this.db),
      this.dailyBars(d0, today, null),
    ]);
    const fill = (rows: Record<string, unknown>[], size: number, keyOf: (r: Record<string, unknown>) => string) => {
      const out = new Map<string, Array<number | null>>();
      for (const r of rows) {
        const k = keyOf(r);
        const bars = out.get(k) ?? Array<number | null>(size).fill(null);
        const i = Number(r.idx);
        if (i >= 0 && i < size) bars[i] = round((100 * Number(r.u)) / Number(r.n), 2);
        out.set(k, bars);
      }
      return out;
    };
    return {
      hourly: fill(hours.rows, 24, (r) => `${r.gateway}\u0000${r.model}`),
      daily: fill([...this.pastDays.rows, ...days.rows], 30, (r) => `${r.provider}\u0000${r.gateway}`),
    };
  }

  private dailyBars(d0: number, from: number, to: number | null) {
    return sql<Record<string, unknown>>`select mh.provider, b.gateway, (b.bucket - ${sql.lit(d0)}) / 86400000 as idx, count(*) as n, ${UP} as u
      from model_health_buckets b join model_health mh on mh.gateway = b.gateway and mh.model = b.model
      where b.bucket >= ${from} ${to === null ? sql`` : sql`and b.bucket < ${to}`}
      group by mh.provider, b.gateway, (b.bucket - ${sql.lit(d0)}) / 86400000`.execute(this.db);
  }

  async unhealthy(threshold: number, minCalls: number) {
    const { rows } = await this.records({ errorRate: { threshold, minCalls }, order: 'error_rate' });
    return {
      models: rows.map((r) => ({ ...recordView(r), error_rate: round((r.calls24 - r.ok24) / r.calls24, 4) })),
      total: rows.length, error_threshold: threshold, min_calls: minCalls,
    };
  }

  async stats() {
    const w = windows(this.clock());
    const [models, calls] = await Promise.all([
      sql<{ n: unknown }>`select count(*) as n from model_health`.execute(this.db),
      sql<Record<string, unknown>>`select coalesce(sum(calls), 0) as calls, coalesce(sum(successes), 0) as ok,
        coalesce(sum(latency_sum), 0) as lat, coalesce(sum(latency_n), 0) as latn
        from model_health_buckets where bucket >= ${w.h24}`.execute(this.db),
    ]);
    const c = calls.rows[0] ?? {};
    const [total, ok, lat, latn] = [c.calls, c.ok, c.lat, c.latn].map(Number);
    return {
      total_models: Number(models.rows[0]?.n ?? 0), total_calls: total, total_success: ok, total_errors: total - ok,
      average_response_time: latn > 0 ? round(lat / latn, 2) : null, success_rate: total > 0 ? round(ok / total, 4) : null,
    };
  }

  async providers() {
    const { rows } = await this.records();
    const since = windows(this.clock()).h24;
    return groupByProvider(rows).map((g) => providerView(g.provider, g.gateway, g.rows, since));
  }

  /** undefined when the provider has no records. */
  async providerSummary(provider: string) {
    const { rows } = await this.records({ provider });
    if (!rows.length) return undefined;
    const gateways = new Set(rows.map((r) => r.gateway));
    const since = windows(this.clock()).h24;
    const a = aggregate(rows, since);
    return {
      ...providerView(provider, gateways.size === 1 ? rows[0].gateway : 'all', rows, since),
      total_calls: a.calls, success_rate: a.calls > 0 ? round(a.ok / a.calls, 4) : null,
    };
  }

  async summary() {
    const now = this.clock();
    const since = windows(now).h24;
    const { rows } = await this.records();
    const providers = groupByProvider(rows).map((g) => providerView(g.provider, g.gateway, g.rows, since));
    const models = countStatuses(rows.map((r) => r.status));
    const all = aggregate(rows, since);
    const lastCheck = rows.reduce<number | null>((m, r) => (m === null || r.last_checked > m ? r.last_checked : m), null);
    return {
      system: {
        overall_status: systemStatus(providers.map((p) => p.status)),
        total_providers: providers.length,
        healthy_providers: providers.filter((p) => p.status === 'online').length,
        degraded_providers: providers.filter((p) => p.status === 'degraded').length,
        unhealthy_providers: providers.filter((p) => p.status === 'outage').length,
        total_models: rows.length, healthy_models: models.healthy, degraded_models: models.degraded, unhealthy_models: models.unhealthy,
        system_uptime: all.uptime, last_updated: iso(now),
      },
      providers,
      models: rows.map(recordView),
      monitoring_active: this.monitoringActive(),
      last_check: iso(lastCheck ?? now),
    };
  }
}
