/**
 * Usage statistics (the `statistics` operations of the spec), aggregated in the database from usage_records and
 * their rollups. Health probes never write usage records, so they are never counted here.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { facts, TOTALS, toTotals, derived, latencyPercentiles, distinctUsers, usersSince, round, type FactFilter } from './facts.js';
import { windowFor, previousWindow, type TimeRange, type Window } from './window.js';

/** What statistics and status need of the catalog: the configured gateways and their aliases (CatalogReader fits). */
export interface GatewayDirectory {
  gateways(): Array<{ id: string; aliases: string[] }>;
  /** Models in this instance's catalog cache for a gateway (status/detailed); absent = 0. */
  cachedModels?(gateway: string): number;
}

export type TrendingSort = 'requests' | 'tokens' | 'users';

const iso = (t: number) => new Date(t).toISOString();

export class UsageStats {
  constructor(
    private readonly db: Kysely<Database>,
    /** null until a catalog is wired: any gateway id is then accepted as given. */
    private readonly directory: GatewayDirectory | null = null,
    readonly clock: () => number = Date.now,
  ) {}

  /** The canonical id of a gateway id or alias; undefined when a directory is known and does not list it. */
  resolveGateway(idOrAlias: string): string | undefined {
    if (!this.directory) return idOrAlias;
    const wanted = idOrAlias.toLowerCase();
    const g = this.directory.gateways().find((x) => x.id.toLowerCase() === wanted || x.aliases.some((a) => a.toLowerCase() === wanted));
    return g?.id;
  }

  private period(w: Window, now: number) {
    return { start: w.start === null ? null : iso(w.start), end: iso(now) };
  }

  private async totals(w: Window, f: FactFilter) {
    const { rows } = await sql<Record<string, unknown>>`select ${TOTALS} from ${facts(w, f)}`.execute(this.db);
    return toTotals(rows[0]);
  }

  async providerStats(provider: string, gatewayParam: string | null, range: TimeRange) {
    const now = this.clock();
    const w = windowFor(range, now);
    const gateway = gatewayParam === null ? null : (this.resolveGateway(gatewayParam) ?? gatewayParam);
    const f: FactFilter = { provider, ...(gateway === null ? {} : { gateway }) };
    const [t, breakdown, pct] = await Promise.all([
      this.totals(w, f),
      sql<Record<string, unknown>>`select model, ${TOTALS} from ${facts(w, f)} group by model
        order by sum(requests) desc, model asc`.execute(this.db),
      latencyPercentiles(this.db, w, f),
    ]);
    const d = derived(t);
    const models = breakdown.rows.map((r) => {
      const mt = toTotals(r);
      const md = derived(mt);
      return { model: String(r.model), requests: mt.requests, tokens: md.tokens, cost_usd: md.cost_usd, avg_latency_ms: md.avg_latency_ms };
    });
    return {
      provider, gateway, time_range: range,
      total_requests: t.requests, successful_requests: t.successes, failed_requests: t.failures,
      total_tokens: d.tokens, prompt_tokens: t.prompt_tokens, completion_tokens: t.completion_tokens, total_cost_usd: d.cost_usd,
      avg_latency_ms: d.avg_latency_ms, avg_tokens_per_second: d.avg_tps, avg_time_to_first_token_ms: d.avg_ttft_ms,
      top_model: models[0]?.model ?? null,
      model_breakdown: models,
      speed_metrics: { p50_latency_ms: pct.p50, p95_latency_ms: pct.p95, avg_tokens_per_second: d.avg_tps },
      period: this.period(w, now),
    };
  }

  /** Requests of the window and their mean latency (successful requests), for the status page. */
  async recent(range: TimeRange) {
    const t = await this.totals(windowFor(range, this.clock()), {});
    return { requests: t.requests, avg_latency_ms: derived(t).avg_latency_ms };
  }

  /** undefined when the directory does not know the gateway (404). */
  async gatewayStats(gatewayParam: string, range: TimeRange) {
    const gateway = this.resolveGateway(gatewayParam);
    if (gateway === undefined) return undefined;
    const now = this.clock();
    const w = windowFor(range, now);
    const f = { gateway };
    const [t, breakdown, uniq, users, pct] = await Promise.all([
      this.totals(w, f),
      sql<Record<string, unknown>>`select provider, ${TOTALS} from ${facts(w, f)} group by provider
        order by sum(requests) desc, provider asc`.execute(this.db),
      sql<{ models: unknown; providers: unknown }>`select count(distinct model) as models, count(distinct provider) as providers
        from ${facts(w, f)}`.execute(this.db),
      distinctUsers(this.db, w.start, gateway, ''),
      latencyPercentiles(this.db, w, f),
    ]);
    const d = derived(t);
    const providers = breakdown.rows.map((r) => {
      const pt = toTotals(r);
      return { provider: String(r.provider), requests: pt.requests, tokens: derived(pt).tokens, cost_usd: derived(pt).cost_usd };
    });
    return {
      gateway, time_range: range,
      total_requests: t.requests, successful_requests: t.successes, failed_requests: t.failures,
      total_tokens: d.tokens, total_cost_usd: d.cost_usd,
      unique_users: users, unique_models: Number(uniq.rows[0]?.models ?? 0), unique_providers: Number(uniq.rows[0]?.providers ?? 0),
      top_provider: providers[0]?.provider ?? null,
      provider_breakdown: providers,
      performance: {
        avg_latency_ms: d.avg_latency_ms, p95_latency_ms: pct.p95, avg_time_to_first_token_ms: d.avg_ttft_ms,
        avg_tokens_per_second: d.avg_tps, success_rate: d.success_rate,
      },
      period: this.period(w, now),
    };
  }

  async gatewaysSummary(range: TimeRange) {
    const w = windowFor(range, this.clock());
    const [perGateway, users, totalsRow, allUsers] = await Promise.all([
      sql<Record<string, unknown>>`select gateway, count(distinct model) as models, ${TOTALS} from ${facts(w)} group by gateway`.execute(this.db),
      sql<{ gateway: string; n: unknown }>`select scope_gateway as gateway, count(*) as n from usage_user_seen
        where scope_gateway <> '' and scope_model = '' and ${usersSince(w.start)} group by scope_gateway`.execute(this.db),
      sql<Record<string, unknown>>`select count(distinct model) as models, count(distinct gateway) as gateways, ${TOTALS}
        from ${facts(w)}`.execute(this.db),
      distinctUsers(this.db, w.start, '', ''),
    ]);
    const usersBy = new Map(users.rows.map((r) => [r.gateway, Number(r.n)]));
    const rows = new Map<string, ReturnType<typeof summaryRow>>();
    for (const g of this.directory?.gateways() ?? []) rows.set(g.id, summaryRow(g.id, toTotals(undefined), 0, 0));
    for (const r of perGateway.rows) {
      const id = String(r.gateway);
      rows.set(id, summaryRow(id, toTotals(r), usersBy.get(id) ?? 0, Number(r.models)));
    }
    const gateways = [...rows.values()].sort((a, b) => b.total_requests - a.total_requests || (a.gateway < b.gateway ? -1 : a.gateway > b.gateway ? 1 : 0));
    const t = toTotals(totalsRow.rows[0]);
    return {
      time_range: range,
      gateways,
      totals: {
        total_requests: t.requests, total_tokens: derived(t).tokens, total_cost_usd: derived(t).cost_usd,
        unique_users: allUsers, unique_models: Number(totalsRow.rows[0]?.models ?? 0),
        active_gateways: Number(totalsRow.rows[0]?.gateways ?? 0),
      },
    };
  }

  async providerTopModels(provider: string, range: TimeRange, limit: number, offset: number) {
    const w = windowFor(range, this.clock());
    const f = { provider };
    const [page, count] = await Promise.all([
      sql<Record<string, unknown>>`select model, ${TOTALS} from ${facts(w, f)} group by model
        order by sum(requests) desc, sum(prompt_tokens) + sum(completion_tokens) desc, model asc
        limit ${limit} offset ${offset}`.execute(this.db),
      sql<{ n: unknown }>`select count(distinct model) as n from ${facts(w, f)}`.execute(this.db),
    ]);
    const models = page.rows.map((r) => String(r.model));
    const users = await this.usersPerModel(w.start, '', models);
    return {
      provider, time_range: range, total: Number(count.rows[0]?.n ?? 0), limit, offset,
      models: page.rows.map((r, i) => {
        const t = toTotals(r);
        const d = derived(t);
        const model = String(r.model);
        return { rank: offset + i + 1, model, requests: t.requests, tokens: d.tokens, cost_usd: d.cost_usd,
          unique_users: users.get(model) ?? 0, avg_latency_ms: d.avg_latency_ms, success_rate: d.success_rate };
      }),
    };
  }

  /** Distinct users per model for a window ending now ('' gateway = every gateway). */
  private async usersPerModel(start: number | null, gateway: string, models: string[]): Promise<Map<string, number>> {
    if (!models.length) return new Map();
    const { rows } = await sql<{ model: string; n: unknown }>`select scope_model as model, count(*) as n from usage_user_seen
      where scope_gateway = ${gateway} and scope_model in (${sql.join(models)}) and ${usersSince(start)}
      group by scope_model`.execute(this.db);
    return new Map(rows.map((r) => [r.model, Number(r.n)]));
  }

  async trending(gatewayParam: string | null, range: Exclude<TimeRange, 'all'>, sortBy: TrendingSort, limit: number, offset: number) {
    const now = this.clock();
    const w = windowFor(range, now);
    const all = gatewayParam === null || gatewayParam.toLowerCase() === 'all';
    const gateway = all ? null : (this.resolveGateway(gatewayParam!) ?? gatewayParam!);
    const f: FactFilter = gateway === null ? {} : { gateway };
    const scope = gateway ?? '';
    // users come from the last-seen table (exact for a window ending now), joined per model before ordering
    const metric = sortBy === 'requests' ? sql`a.requests` : sortBy === 'tokens' ? sql`a.tokens` : sql`coalesce(u.users, 0)`;
    const [page, count] = await Promise.all([
      sql<Record<string, unknown>>`select a.model, a.provider, a.requests, a.tokens, coalesce(u.users, 0) as users
        from (select model, max(provider) as provider, sum(requests) as requests, sum(prompt_tokens) + sum(completion_tokens) as tokens
              from ${facts(w, f)} group by model) a
        left join (select scope_model as model, count(*) as users from usage_user_seen
              where scope_gateway = ${scope} and scope_model <> '' and ${usersSince(w.start)} group by scope_model) u on u.model = a.model
        order by ${metric} desc, a.requests desc, a.model asc limit ${limit} offset ${offset}`.execute(this.db),
      sql<{ n: unknown }>`select count(distinct model) as n from ${facts(w, f)}`.execute(this.db),
    ]);
    const models = page.rows.map((r) => String(r.model));
    const [gateways, previous] = await Promise.all([this.gatewaysOf(w, f, models), this.previousMetric(range, now, f, sortBy, models)]);
    return {
      total: Number(count.rows[0]?.n ?? 0), limit, offset, time_range: range, sort_by: sortBy, gateway: gateway ?? 'all',
      models: page.rows.map((r, i) => {
        const model = String(r.model);
        const cur = { requests: Number(r.requests), tokens: Number(r.tokens), users: Number(r.users) };
        const prev = previous.get(model) ?? 0;
        return { rank: offset + i + 1, model, provider: String(r.provider), gateways: gateways.get(model) ?? [],
          requests: cur.requests, tokens: cur.tokens, unique_users: cur.users,
          growth_percent: prev > 0 ? round(((cur[sortBy] - prev) / prev) * 100, 2) : null };
      }),
    };
  }

  private async gatewaysOf(w: Window, f: FactFilter, models: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (!models.length) return out;
    const { rows } = await sql<{ model: string; gateway: string }>`select model, gateway from ${facts(w, f)}
      where model in (${sql.join(models)}) group by model, gateway order by model, gateway`.execute(this.db);
    for (const r of rows) out.set(r.model, [...(out.get(r.model) ?? []), r.gateway]);
    return out;
  }

  /**
   * The sort metric of the previous window for the listed models. Distinct users of a window that does not end
   * now cannot come from the last-seen table: they are counted from the raw rows of those models, through the
   * covering (model, created_at, gateway, user_id) index. The gateway is compared as `gateway || ''`: an expression
   * no index serves, so SQLite's planner (which keeps no statistics here) does not read the gateway's whole window
   * through (gateway, created_at, …) instead; PostgreSQL's plan is the same either way.
   */
  private async previousMetric(range: Exclude<TimeRange, 'all'>, now: number, f: FactFilter, sortBy: TrendingSort, models: string[]) {
    const out = new Map<string, number>();
    if (!models.length) return out;
    const pw = previousWindow(range, now);
    const inModels = sql`model in (${sql.join(models)})`;
    const { rows } = sortBy === 'users'
      ? await sql<{ model: string; v: unknown }>`select model, count(distinct user_id) as v from usage_records
          where ${inModels} and created_at >= ${pw.start} and created_at < ${pw.end}
          ${f.gateway !== undefined ? sql`and gateway || '' = ${f.gateway}` : sql``} group by model`.execute(this.db)
      : await sql<{ model: string; v: unknown }>`select model, ${sortBy === 'requests' ? sql`sum(requests)` : sql`sum(prompt_tokens) + sum(completion_tokens)`} as v
          from ${facts(pw, f)} where ${inModels} group by model`.execute(this.db);
    for (const r of rows) out.set(r.model, Number(r.v));
    return out;
  }
}

function summaryRow(gateway: string, t: ReturnType<typeof toTotals>, users: number, models: number) {
  const d = derived(t);
  return { gateway, total_requests: t.requests, total_tokens: d.tokens, total_cost_usd: d.cost_usd, unique_users: users,
    unique_models: models, success_rate: d.success_rate, avg_latency_ms: d.avg_latency_ms };
}
