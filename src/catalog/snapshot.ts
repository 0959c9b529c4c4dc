/**
 * The built catalog: indexes and pre-sorted lists over every offer. Queries scan these in order and slice a
 * page; nothing is sorted per request except the few offers of one model.
 *
 * Two stages. The constructor builds everything that depends on catalog data alone (once per discovery
 * sync). applyHealth() then lays measured health and popularity over it (on every health refresh): it updates
 * the entries in place and rebuilds only the lists that depend on them. It runs synchronously, and every
 * query is synchronous, so no request ever sees a half-applied refresh.
 */
import type { GatewayInfo } from './types.js';
import type { CatalogOffer, RouterMode } from './seeds.js';
import { type Entry, type OfferHealth, UNKNOWN_HEALTH, isChatOffer } from './entry.js';
import { CATEGORIES, type ModelCategory, applyFastest, assignBaseCategories, blendedPrice, categoryComparator, nullsLast } from './categories.js';
import { orderByMode } from './routers.js';

export interface UniqueModelEntry {
  modelId: string;
  name: string;
  nameLower: string;
  developer: string;
  /** Offers, cheapest prompt price first (ties: completion price, gateway id; unknown prices last). */
  offers: Entry[];
  cheapest: Entry | null;
  fastest: Entry | null;
}

export interface Alternative {
  family: string;
  slowModel: string;
  fastAlternatives: string[];
}

export type SearchSort = 'price' | 'context' | 'popularity' | 'name';
export type UniqueSort = 'provider_count' | 'name' | 'cheapest_price';
export type SortOrder = 'asc' | 'desc';

export interface BuildInput {
  offers: CatalogOffer[];
  gateways: GatewayInfo[];
  configured: Set<string>;
}

export interface HealthInput {
  /** Health by `gateway \0 model` (model = upstream or canonical id, lower case). */
  health: Map<string, OfferHealth>;
  /** Request counts by `gateway \0 model`, last 7 days. */
  requests: Map<string, number>;
}

export const key = (gateway: string, model: string) => `${gateway}\u0000${model.toLowerCase()}`;
const cmpStr = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function push<K, V>(m: Map<K, V[]>, k: K, v: V) {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

export class Snapshot {
  readonly entries: Entry[];
  readonly active: Entry[];
  readonly byModel = new Map<string, Entry[]>();
  readonly byDeveloper = new Map<string, Entry[]>();
  readonly byGateway = new Map<string, Entry[]>();
  /** `gateway \0 upstream id` and `gateway \0 canonical id` → offers. */
  readonly byGatewayModel = new Map<string, Entry[]>();
  /** Bare words (model part of canonical ids, upstream ids and their last segment) → canonical ids. */
  readonly bare = new Map<string, Set<string>>();
  readonly categories = new Map<ModelCategory, { all: Entry[]; active: Entry[] }>();
  readonly searchOrders = new Map<string, Entry[]>();
  readonly unique: { active: UniqueModelEntry[]; all: UniqueModelEntry[] };
  readonly uniqueOrders = new Map<string, UniqueModelEntry[]>();
  lowLatency: Entry[] = [];
  alternatives: Alternative[] = [];
  /** Router orders, computed on first use after each health refresh (unused modes cost nothing). */
  private readonly routerOrders = new Map<RouterMode, Entry[]>();
  private routerCandidates: Entry[] = [];
  /**
   * What a model name resolves to (Catalog.resolve), kept until the next health refresh: every request resolves
   * its model, and ordering the offers each time cost more than the lookup. Read-only for callers.
   */
  readonly resolved = new Map<string, readonly CatalogOffer[]>();

  constructor(input: BuildInput, health: HealthInput) {
    const rank = new Map(input.gateways.map((g, i) => [g.id, i]));
    const sorted = [...input.offers].sort((a, b) => cmpStr(a.modelId, b.modelId) || cmpStr(a.gateway, b.gateway) || cmpStr(a.upstreamModel, b.upstreamModel));
    this.entries = sorted.map((o, order) => ({
      o, order,
      idLower: o.modelId.toLowerCase(),
      nameLower: o.name.toLowerCase(),
      haystack: `${o.modelId}\n${o.name}\n${o.developer}\n${o.description ?? ''}`.toLowerCase(),
      blended: blendedPrice(o.pricing.prompt, o.pricing.completion),
      health: UNKNOWN_HEALTH.status, avgMs: null, successRate: null,
      baseCategories: [], categories: [],
      popularity: 0,
      configured: input.configured.has(o.gateway),
      chat: isChatOffer(o),
      gatewayRank: rank.get(o.gateway) ?? rank.size,
      keys: [key(o.gateway, o.upstreamModel), key(o.gateway, o.modelId)] as [string, string],
    }));
    this.active = this.entries.filter((e) => e.o.isActive);
    assignBaseCategories(this.entries);
    this.index();
    for (const c of CATEGORIES) {
      if (c === 'fastest') continue;
      const all = this.entries.filter((e) => e.baseCategories.includes(c)).sort(categoryComparator(c));
      this.categories.set(c, { all, active: all.filter((e) => e.o.isActive) });
    }
    this.sortSearch(['price', 'context', 'name']);
    this.unique = { active: this.groupUnique(this.active), all: this.groupUnique(this.entries) };
    this.sortUnique();
    this.applyHealth(health);
  }

  /** Lays measured health and popularity over the entries and rebuilds what depends on them. */
  applyHealth(input: HealthInput): void {
    const look = <T>(m: Map<string, T>, e: Entry): T | undefined => m.get(e.keys[0]) ?? m.get(e.keys[1]);
    const popularity = new Map<string, number>();
    for (const e of this.entries) {
      const h = look(input.health, e) ?? UNKNOWN_HEALTH;
      e.health = h.status;
      e.avgMs = h.avgMs;
      e.successRate = h.successRate;
      popularity.set(e.idLower, (popularity.get(e.idLower) ?? 0) + (look(input.requests, e) ?? 0));
    }
    for (const e of this.entries) e.popularity = popularity.get(e.idLower)!;

    const fast = applyFastest(this.entries).sort(categoryComparator('fastest'));
    this.categories.set('fastest', { all: fast, active: fast.filter((e) => e.o.isActive) });
    this.sortSearch(['popularity']);
    for (const u of [...this.unique.active, ...this.unique.all]) {
      let fastest: Entry | null = null;
      for (const e of u.offers) if (e.avgMs !== null && (!fastest || e.avgMs < fastest.avgMs! || (e.avgMs === fastest.avgMs && e.o.gateway < fastest.o.gateway))) fastest = e;
      u.fastest = fastest;
    }
    this.lowLatency = this.active.filter((e) => e.avgMs !== null && e.avgMs < 500).sort((a, b) => a.avgMs! - b.avgMs! || a.order - b.order);
    this.alternatives = this.findAlternatives();
    this.routerCandidates = this.active.filter((e) => e.configured && e.chat);
    this.routerOrders.clear();
    this.resolved.clear();
  }

  /** `router:<mode>` without a model: active chat offers of configured gateways in the mode's order. */
  routerOrder(mode: RouterMode): readonly Entry[] {
    let order = this.routerOrders.get(mode);
    if (!order) this.routerOrders.set(mode, (order = orderByMode(this.routerCandidates, mode)));
    return order;
  }

  private index() {
    for (const e of this.entries) {
      const o = e.o;
      push(this.byModel, e.idLower, e);
      push(this.byDeveloper, o.developer.toLowerCase(), e);
      push(this.byGateway, o.gateway, e);
      push(this.byGatewayModel, key(o.gateway, o.upstreamModel), e);
      if (o.upstreamModel.toLowerCase() !== e.idLower) push(this.byGatewayModel, key(o.gateway, o.modelId), e);
      const up = o.upstreamModel.toLowerCase();
      for (const w of [e.idLower.slice(e.idLower.indexOf('/') + 1), up, up.slice(up.lastIndexOf('/') + 1)]) {
        let s = this.bare.get(w);
        if (!s) this.bare.set(w, (s = new Set()));
        s.add(e.idLower);
      }
    }
  }

  /** Pre-sorted active entries per search key and order: unknown values last, ties by id then gateway. */
  private sortSearch(which: SearchSort[]) {
    const n = this.active.length;
    const inf = (v: number | null, d: 1 | -1) => (v === null ? Infinity : v * d);
    for (const k of which) {
      for (const [order, d] of [['asc', 1], ['desc', -1]] as const) {
        if (k === 'name') {
          this.searchOrders.set(`name:${order}`, [...this.active].sort((a, b) => cmpStr(a.nameLower, b.nameLower) * d || a.order - b.order));
          continue;
        }
        const k1 = new Float64Array(n);
        const k2 = new Float64Array(n);
        this.active.forEach((e, i) => {
          k1[i] = k === 'price' ? inf(e.o.pricing.prompt, d) : k === 'context' ? inf(e.o.contextLength, d) : e.popularity * d;
          k2[i] = k === 'price' ? inf(e.o.pricing.completion, d) : 0;
        });
        // Infinity − Infinity is NaN (falsy): equal unknowns fall through to the next key.
        const idx = Array.from({ length: n }, (_, i) => i).sort((a, b) => k1[a] - k1[b] || k2[a] - k2[b] || a - b);
        this.searchOrders.set(`${k}:${order}`, idx.map((i) => this.active[i]));
      }
    }
  }

  private groupUnique(entries: Entry[]): UniqueModelEntry[] {
    const groups = new Map<string, Entry[]>();
    for (const e of entries) push(groups, e.idLower, e);
    const out: UniqueModelEntry[] = [];
    for (const offers of groups.values()) {
      offers.sort((a, b) => nullsLast(a.o.pricing.prompt, b.o.pricing.prompt, 1)
        || nullsLast(a.o.pricing.completion, b.o.pricing.completion, 1) || cmpStr(a.o.gateway, b.o.gateway));
      let named = offers[0];
      for (const e of offers) if (e.gatewayRank < named.gatewayRank) named = e;
      out.push({
        modelId: offers[0].o.modelId,
        name: named.o.name,
        nameLower: named.o.name.toLowerCase(),
        developer: offers[0].o.developer,
        offers,
        cheapest: offers[0].o.pricing.prompt !== null ? offers[0] : null,
        fastest: null,
      });
    }
    return out.sort((a, b) => cmpStr(a.modelId, b.modelId));
  }

  private sortUnique() {
    const price = (u: UniqueModelEntry) => u.cheapest?.o.pricing.prompt ?? null;
    const keys: Record<UniqueSort, (a: UniqueModelEntry, b: UniqueModelEntry, d: 1 | -1) => number> = {
      provider_count: (a, b, d) => (a.offers.length - b.offers.length) * d,
      name: (a, b, d) => cmpStr(a.nameLower, b.nameLower) * d,
      cheapest_price: (a, b, d) => nullsLast(price(a), price(b), d),
    };
    for (const variant of ['active', 'all'] as const) {
      for (const [k, cmp] of Object.entries(keys)) {
        for (const [order, d] of [['asc', 1], ['desc', -1]] as const) {
          // `unique.*` is already in id order, so a stable sort keeps id as the tie-break.
          this.uniqueOrders.set(`${variant}:${k}:${order}`, [...this.unique[variant]].sort((a, b) => cmp(a, b, d)));
        }
      }
    }
  }

  private findAlternatives(): Alternative[] {
    const families = new Map<string, Entry[]>();
    for (const e of this.active) if (e.avgMs !== null && e.o.family) push(families, e.o.family, e);
    const out: Alternative[] = [];
    for (const [family, list] of families) {
      const slow = list.filter((e) => e.avgMs! >= 500);
      const fast = list.filter((e) => e.avgMs! < 500).sort((a, b) => a.avgMs! - b.avgMs! || a.order - b.order);
      if (!slow.length || !fast.length) continue;
      const slowest = slow.reduce((m, e) => (e.avgMs! > m.avgMs! ? e : m));
      out.push({ family, slowModel: slowest.o.modelId, fastAlternatives: [...new Set(fast.map((e) => e.o.modelId))] });
    }
    return out.sort((a, b) => cmpStr(a.family, b.family));
  }
}
