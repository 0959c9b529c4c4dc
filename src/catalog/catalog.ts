/**
 * The catalog service: seeds merged with discovered model lists, measured health and popularity, built into
 * a Snapshot that every query and the engine's resolve() read. Rebuilt after each discovery sync; each
 * health refresh lays the new measurements over it (both on intervals and on demand), never per request.
 */
import type { Config } from '../config.js';
import { upstreamSetting } from '../config.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/index.js';
import type { CatalogOfferRow, DiscoveredRow } from '../store/catalog.js';
import { UpstreamError } from '../engine/types.js';
import { notFound } from '../errors.js';
import type { CatalogReader, GatewayInfo } from './types.js';
import type { CatalogOffer, Seeds } from './seeds.js';
import { type OfferHealth, healthFromCounters, type Entry } from './entry.js';
import { Snapshot, key } from './snapshot.js';
import { mergeOffers } from './merge.js';
import { discoverModels, type Upstream } from './discovery.js';
import { orderByMode, parseRouter, routerView } from './routers.js';
import { gatewayConfig } from './views.js';
import type { ModelCategory } from './categories.js';
import * as Q from './queries.js';

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface CatalogOptions {
  config: Config;
  logger: Logger;
  seeds: Seeds;
  /** Persistence of discovered lists, health and usage; without it the catalog lives in memory only. */
  store?: Store;
}

interface SyncState {
  lastSync: number | null;
  lastError: string | null;
}

export interface SyncResult {
  gateway: string;
  ok: boolean;
  models?: number;
  error?: string;
}

const WEEK_MS = 7 * 24 * 3600 * 1000;

export class Catalog implements CatalogReader {
  private snap!: Snapshot;
  private readonly gatewayList: GatewayInfo[];
  private readonly names = new Map<string, string>();
  private readonly configured = new Set<string>();
  private readonly developers: Map<string, Q.DeveloperCard>;
  private discovered = new Map<string, CatalogOfferRow[]>();
  private readonly syncState = new Map<string, SyncState>();
  private health = new Map<string, OfferHealth>();
  private requests = new Map<string, number>();
  private readonly upstreams = new Map<string, Upstream | undefined>();
  private breaker: (gateway: string) => BreakerState = () => 'closed';
  private timers: NodeJS.Timeout[] = [];
  private syncing: Promise<SyncResult[]> | undefined;
  private readonly abort = new AbortController();
  /** Milliseconds the last full rebuild and the last health overlay took (reported by the benchmark). */
  lastBuildMs = 0;
  lastHealthMs = 0;

  constructor(private readonly opts: CatalogOptions) {
    const { seeds, config } = opts;
    this.gatewayList = [...seeds.gateways].sort((a, b) => (a.priority === b.priority ? (a.id < b.id ? -1 : 1) : a.priority === 'fast' ? -1 : 1));
    for (const g of this.gatewayList) {
      for (const n of [g.id, ...g.aliases]) this.names.set(n.toLowerCase(), g.id);
      const s = upstreamSetting(config, g.id);
      if (g.keyOptional ? s.baseUrl : s.apiKey) this.configured.add(g.id);
      this.syncState.set(g.id, { lastSync: null, lastError: null });
    }
    this.developers = new Map(seeds.developers.map((d) => [d.slug.toLowerCase(), d]));
    this.rebuild();
  }

  /** Loads what was persisted, then starts the sync and health timers (an interval of 0 turns one off). */
  async start(): Promise<void> {
    await this.load();
    const { catalogSyncIntervalMs: syncMs, catalogHealthRefreshMs: healthMs } = this.opts.config;
    if (syncMs > 0) {
      const sync = () => this.syncNow().catch((err) => this.opts.logger.error({ err }, 'catalog sync failed'));
      void sync();
      this.timers.push(setInterval(sync, syncMs));
    }
    if (healthMs > 0) {
      this.timers.push(setInterval(() => {
        this.refreshHealth().catch((err) => this.opts.logger.warn({ err }, 'catalog health refresh failed'));
      }, healthMs));
    }
    for (const t of this.timers) t.unref();
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.abort.abort();
    await this.syncing?.catch(() => {});
  }

  /** The engine's circuit breakers, for gateways/status and for picking the routable offer of a model. */
  setBreakerState(fn: (gateway: string) => BreakerState): void {
    this.breaker = fn;
  }

  get snapshot(): Snapshot {
    return this.snap;
  }

  // ---------- CatalogReader ----------

  resolve(model: string): readonly CatalogOffer[] {
    const cache = this.snap.resolved;
    const hit = cache.get(model);
    if (hit) return hit;
    const s = model.trim();
    const choice = parseRouter(s, this.opts.seeds.routers);
    if (choice === null) return [];
    const offers = choice === undefined ? orderByMode(this.find(s), 'cheapest').map((e) => e.o)
      : !choice.model ? this.snap.routerOrder(choice.router.mode).map((e) => e.o)
        : orderByMode(this.find(choice.model), choice.router.mode).map((e) => e.o);
    // Names come from clients: only names that resolve are kept, and the cache is bounded.
    if (offers.length) {
      if (cache.size >= 4096) cache.clear();
      cache.set(model, offers);
    }
    return offers;
  }

  gateway(id: string): GatewayInfo | undefined {
    const gid = this.names.get(id.toLowerCase());
    return gid ? this.gatewayList.find((g) => g.id === gid) : undefined;
  }

  gateways(): GatewayInfo[] {
    return this.gatewayList;
  }

  isConfigured(gatewayId: string): boolean {
    return this.configured.has(gatewayId);
  }

  /** Where and with which key to reach a configured gateway; undefined when it is not configured. */
  upstream(gatewayId: string): Upstream | undefined {
    // Asked on every request: the settings are read from the environment once per gateway, not per call.
    if (this.upstreams.has(gatewayId)) return this.upstreams.get(gatewayId);
    const g = this.gateway(gatewayId);
    if (!g) return undefined; // only known ids and aliases are kept: the map stays as small as the gateway list
    let up: Upstream | undefined;
    if (this.configured.has(g.id)) {
      const s = upstreamSetting(this.opts.config, g.id);
      up = { baseUrl: (s.baseUrl ?? g.baseUrl).replace(/\/+$/, ''), apiKey: s.apiKey ?? '' };
    }
    this.upstreams.set(gatewayId, up);
    return up;
  }

  /** `all`/null → null; a gateway id or alias → its id; anything else → 404. */
  gatewayFilter(name: string | null | undefined): string | null {
    if (name === null || name === undefined || name.toLowerCase() === 'all') return null;
    const id = this.names.get(name.toLowerCase());
    if (!id) throw notFound(`Unknown gateway "${name}". See GET /v1/gateways for the gateway ids and aliases.`);
    return id;
  }

  private find(s: string): Entry[] {
    const lower = s.toLowerCase();
    const canonical = this.snap.byModel.get(lower);
    if (canonical) return canonical;
    const slash = lower.indexOf('/');
    if (slash > 0) {
      const gw = this.names.get(lower.slice(0, slash));
      const hit = gw ? this.snap.byGatewayModel.get(key(gw, lower.slice(slash + 1))) : undefined;
      if (hit) return hit;
    }
    const ids = this.snap.bare.get(lower);
    return ids ? [...ids].flatMap((id) => this.snap.byModel.get(id) ?? []) : [];
  }

  // ---------- building ----------

  /** Full rebuild (after a sync): merge, indexes, sorts, then the health overlay. */
  rebuild(): void {
    const t0 = performance.now();
    const offers = mergeOffers(this.opts.seeds.offers, this.discovered, this.gatewayList);
    this.snap = new Snapshot(
      { offers, gateways: this.gatewayList, configured: this.configured },
      { health: this.health, requests: this.requests },
    );
    this.lastBuildMs = performance.now() - t0;
  }

  private async load(): Promise<void> {
    const store = this.opts.store;
    if (store) {
      const rows = await store.catalog.offers();
      const byGateway = new Map<string, CatalogOfferRow[]>();
      for (const r of rows) {
        const list = byGateway.get(r.gateway);
        if (list) list.push(r);
        else byGateway.set(r.gateway, [r]);
      }
      this.discovered = byGateway;
      for (const s of await store.catalog.syncState()) {
        const st = this.syncState.get(s.gateway);
        if (st) st.lastSync = s.last_sync === null ? null : Number(s.last_sync);
      }
    }
    await this.loadHealth();
    this.rebuild();
  }

  /** Reloads measured health and 7-day request counts and lays them over the built catalog. */
  async refreshHealth(): Promise<void> {
    await this.loadHealth();
    const t0 = performance.now();
    this.snap.applyHealth({ health: this.health, requests: this.requests });
    this.lastHealthMs = performance.now() - t0;
  }

  private async loadHealth(): Promise<void> {
    const store = this.opts.store;
    if (store) {
      const health = new Map<string, OfferHealth>();
      for (const row of await store.health.all()) health.set(key(row.gateway, row.model), healthFromCounters(row));
      const requests = new Map<string, number>();
      for (const r of await store.catalog.requestCounts(Date.now() - WEEK_MS)) {
        const k = key(r.gateway, r.model);
        requests.set(k, (requests.get(k) ?? 0) + r.n);
      }
      this.health = health;
      this.requests = requests;
    }
  }

  /**
   * Fetches the model list of every configured gateway (or of `only`), fast-priority gateways first, then
   * rebuilds once. A failing gateway keeps serving its last list (stale) and reports the error in
   * gateways/status. One sync runs at a time: a call during a sync waits for that sync.
   */
  syncNow(only?: string[]): Promise<SyncResult[]> {
    this.syncing ??= (async () => {
      try {
        const targets = this.gatewayList.filter((g) => this.configured.has(g.id) && (!only || only.includes(g.id)));
        const results: SyncResult[] = [];
        // Progress for a long sync (many gateways, slow lists): one line per gateway as it ends, `done/of`.
        const t0 = Date.now();
        let done = 0;
        const progress = () => `${++done}/${targets.length}`;
        if (targets.length) this.opts.logger.info({ gateways: targets.map((g) => g.id) }, 'catalog sync: started');
        for (const wave of ['fast', 'slow']) {
          results.push(...await Promise.all(targets.filter((g) => g.priority === wave).map((g) => this.syncGateway(g, progress))));
        }
        if (results.length) {
          this.rebuild();
          const failed = results.filter((r) => !r.ok).map((r) => r.gateway);
          this.opts.logger.info({ ok: results.length - failed.length, failed, ms: Date.now() - t0 }, 'catalog sync: finished');
        }
        return results;
      } finally {
        this.syncing = undefined;
      }
    })();
    return this.syncing;
  }

  private async syncGateway(g: GatewayInfo, progress: () => string): Promise<SyncResult> {
    const { config, logger, store } = this.opts;
    const up = this.upstream(g.id)!;
    const state = this.syncState.get(g.id)!;
    const t0 = Date.now();
    logger.info({ gateway: g.id }, 'catalog sync: fetching model list');
    try {
      const timeouts = {
        connectMs: config.upstreamConnectTimeoutMs,
        firstByteMs: Math.min(config.upstreamFirstByteTimeoutMs, config.catalogSyncTimeoutMs),
        totalMs: config.catalogSyncTimeoutMs,
      };
      const listed = await discoverModels(g, up, timeouts, this.abort.signal);
      const seen = new Set<string>();
      const rows: DiscoveredRow[] = listed.filter((r) => (seen.has(r.upstream_model) ? false : (seen.add(r.upstream_model), true)));
      const at = Date.now();
      await store?.catalog.replaceGateway(g.id, rows, at);
      this.discovered.set(g.id, rows.map((r) => ({
        gateway: g.id, synced_at: at, name: r.name ?? null, description: r.description ?? null,
        context_length: r.context_length ?? null, max_output_tokens: r.max_output_tokens ?? null,
        prompt_price: r.prompt_price ?? null, completion_price: r.completion_price ?? null, extra: r.extra ?? null,
        upstream_model: r.upstream_model,
      })));
      state.lastSync = at;
      logger.info({ gateway: g.id, models: rows.length, ms: at - t0, progress: progress() }, 'catalog sync: model list updated');
      return { gateway: g.id, ok: true, models: rows.length };
    } catch (err) {
      const message = sanitise(err, up.apiKey);
      state.lastError = message;
      await store?.catalog.markAttempt(g.id, Date.now()).catch(() => {});
      logger.warn({ gateway: g.id, error: message, ms: Date.now() - t0, progress: progress() }, 'catalog sync failed: serving the last known list');
      return { gateway: g.id, ok: false, error: message };
    }
  }

  // ---------- operations ----------

  private get ctx(): Q.Ctx {
    return {
      snap: this.snap,
      gatewayName: (id) => this.gatewayList.find((g) => g.id === id)?.name ?? id,
      routable: (id) => this.configured.has(id) && this.breaker(id) !== 'open',
    };
  }

  /** Active chat offers of configured gateways: what the active health monitor probes. */
  probeTargets(): Array<{ gateway: string; model: string; provider: string }> {
    return this.snap.entries
      .filter((e) => e.o.isActive && this.isConfigured(e.o.gateway) && e.o.modalities.output.includes('text'))
      .map((e) => ({ gateway: e.o.gateway, model: e.o.modelId, provider: e.o.developer }));
  }

  /** Active models this instance holds for a gateway (status/detailed). */
  cachedModels(gateway: string): number {
    return (this.snap.byGateway.get(gateway) ?? []).filter((e) => e.o.isActive).length;
  }

  listRouters() {
    const routers = this.opts.seeds.routers.map(routerView);
    return { routers, count: routers.length };
  }

  listGateways() {
    const gateways = this.gatewayList.map((g) => gatewayConfig(g, this.configured.has(g.id)));
    return { gateways, count: gateways.length };
  }

  gatewaysStatus() {
    const now = Date.now();
    const gateways = this.gatewayList.map((g) => {
      const s = this.syncState.get(g.id)!;
      const breaker = this.breaker(g.id);
      return {
        gateway: g.id,
        configured: this.configured.has(g.id),
        error_state: breaker === 'open',
        breaker_state: breaker,
        cached_models: (this.snap.byGateway.get(g.id) ?? []).filter((e) => e.o.isActive).length,
        cache_age_seconds: s.lastSync === null ? null : Math.max(0, (now - s.lastSync) / 1000),
        last_sync: s.lastSync === null ? null : new Date(s.lastSync).toISOString(),
        last_error: s.lastError,
      };
    });
    return { gateways, checked_at: new Date(now).toISOString() };
  }

  listProviders(moderatedOnly: boolean, gateway: string | null | undefined, offset: number, limit: number) {
    return Q.listProviders(this.ctx, this.developers, moderatedOnly, this.gatewayFilter(gateway), offset, limit);
  }

  listModels(q: Omit<Q.ListModelsQuery, 'gateway'> & { gateway: string | null | undefined }) {
    return Q.listModels(this.ctx, { ...q, gateway: this.gatewayFilter(q.gateway) });
  }

  searchModels(q: Omit<Q.SearchQuery, 'gateway'> & { gateway: string | null | undefined }) {
    return Q.searchModels(this.ctx, { ...q, gateway: this.gatewayFilter(q.gateway) });
  }

  listByCategory(category: ModelCategory, includeInactive: boolean, limit: number) {
    return Q.byCategory(this.ctx, category, includeInactive, limit);
  }

  listLowLatency(ultraOnly: boolean, alternatives: boolean, offset: number, limit: number) {
    return Q.lowLatency(this.ctx, ultraOnly, alternatives, offset, limit);
  }

  listUnique(q: Q.UniqueQuery) {
    return Q.listUnique(this.ctx, q);
  }

  batchCompare(ids: string[], criteria: 'price' | 'context' | 'availability') {
    return Q.batchCompare(this.ctx, ids, criteria);
  }

  compareAcrossGateways(modelId: string, gateways: string | null | undefined) {
    const ids = (gateways ?? 'all').split(',').map((n) => n.trim()).filter(Boolean).map((n) => this.gatewayFilter(n));
    return Q.compareAcrossGateways(this.ctx, modelId, ids.length === 0 || ids.includes(null) ? null : (ids as string[]));
  }

  getModel(modelId: string, gateway: string | null | undefined, hub: boolean) {
    return Q.getModel(this.ctx, modelId, gateway === null || gateway === undefined ? null : this.gatewayFilter(gateway), hub);
  }

  listDeveloperModels(developer: string, gateway: string | null | undefined, hub: boolean, offset: number, limit: number) {
    return Q.developerModels(this.ctx, developer, this.gatewayFilter(gateway), hub, offset, limit);
  }
}

/** A short error message safe to show: never the key, never a raw upstream body. */
function sanitise(err: unknown, apiKey: string): string {
  const raw = err instanceof UpstreamError ? err.message : `model list fetch failed: ${err instanceof Error ? err.message : String(err)}`;
  const out = apiKey ? raw.split(apiKey).join('[redacted]') : raw;
  return out.slice(0, 300);
}
