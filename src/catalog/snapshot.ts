/**
 * The built catalog: immutable indexes and pre-sorted lists over every offer, made once per rebuild (a sync,
 * a health refresh). Queries scan these in order and slice a page; nothing is sorted per request except the
 * few offers of one model.
 */
import type { GatewayInfo } from './types.js';
import type { CatalogOffer, RouterInfo, RouterMode } from './seeds.js';
import { type Entry, type OfferHealth, UNKNOWN_HEALTH, isChatOffer } from './entry.js';
import { CATEGORIES, type ModelCategory, assignCategories, blendedPrice, categoryComparator, nullsLast } from './categories.js';
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
  routers: RouterInfo[];
  configured: Set<string>;
  /** Health by `gateway \0 model` (model = upstream or canonical id). */
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
  readonly lowLatency: Entry[];
  readonly alternatives: Alternative[];
  readonly routerOrders = new Map<RouterMode, Entry[]>();
  readonly builtAt = Date.now();

  constructor(input: BuildInput) {
    const rank = new Map(input.gateways.map((g, i) => [g.id, i]));
    const sorted = [...input.offers].sort((a, b) => cmpStr(a.modelId, b.modelId) || cmpStr(a.gateway, b.gateway) || cmpStr(a.upstreamModel, b.upstreamModel));
    const look = <T>(m: Map<string, T>, o: CatalogOffer): T | undefined => m.get(key(o.gateway, o.upstreamModel)) ?? m.get(key(o.gateway, o.modelId));

    const popularity = new Map<string, number>();
    for (const o of sorted) popularity.set(o.modelId, (popularity.get(o.modelId) ?? 0) + (look(input.requests, o) ?? 0));

    this.entries = sorted.map((o, order) => {
      const h = look(input.health, o) ?? UNKNOWN_HEALTH;
      return {
        o, order,
        idLower: o.modelId.toLowerCase(),
        nameLower: o.name.toLowerCase(),
        haystack: `${o.modelId}\n${o.name}\n${o.developer}\n${o.description ?? ''}`.toLowerCase(),
        blended: blendedPrice(o.pricing.prompt, o.pricing.completion),
        health: h.status, avgMs: h.avgMs, successRate: h.successRate,
        categories: [],
        popularity: popularity.get(o.modelId) ?? 0,
        configured: input.configured.has(o.gateway),
        chat: isChatOffer(o),
        gatewayRank: rank.get(o.gateway) ?? rank.size,
      };
    });
    this.active = this.entries.filter((e) => e.o.isActive);
    assignCategories(this.entries);
    this.index();
    for (const c of CATEGORIES) {
      const all = this.entries.filter((e) => e.categories.includes(c)).sort(categoryComparator(c));
      this.categories.set(c, { all, active: all.filter((e) => e.o.isActive) });
    }
    this.sortSearch();
    this.unique = { active: this.groupUnique(this.active), all: this.groupUnique(this.entries) };
    this.sortUnique();
    this.lowLatency = this.active.filter((e) => e.avgMs !== null && e.avgMs < 500).sort((a, b) => a.avgMs! - b.avgMs! || a.order - b.order);
    this.alternatives = this.findAlternatives();
    const candidates = this.active.filter((e) => e.configured && e.chat);
    for (const r of input.routers) if (!this.routerOrders.has(r.mode)) this.routerOrders.set(r.mode, orderByMode(candidates, r.mode));
  }

  private index() {
    for (const e of this.entries) {
      const o = e.o;
      push(this.byModel, e.idLower, e);
      push(this.byDeveloper, o.developer.toLowerCase(), e);
      push(this.byGateway, o.gateway, e);
      push(this.byGatewayModel, key(o.gateway, o.upstreamModel), e);
      if (o.upstreamModel.toLowerCase() !== e.idLower) push(this.byGatewayModel, key(o.gateway, o.modelId), e);
      const words = new Set([e.idLower.slice(e.idLower.indexOf('/') + 1), o.upstreamModel.toLowerCase(), o.upstreamModel.toLowerCase().split('/').pop()!]);
      for (const w of words) {
        let s = this.bare.get(w);
        if (!s) this.bare.set(w, (s = new Set()));
        s.add(e.idLower);
      }
    }
  }

  private sortSearch() {
    const tie = (a: Entry, b: Entry) => a.order - b.order;
    const keys: Record<SearchSort, (a: Entry, b: Entry, dir: 1 | -1) => number> = {
      price: (a, b, d) => nullsLast(a.o.pricing.prompt, b.o.pricing.prompt, d) || nullsLast(a.o.pricing.completion, b.o.pricing.completion, d),
      context: (a, b, d) => nullsLast(a.o.contextLength, b.o.contextLength, d),
      popularity: (a, b, d) => (a.popularity - b.popularity) * d,
      name: (a, b, d) => cmpStr(a.nameLower, b.nameLower) * d,
    };
    for (const [k, cmp] of Object.entries(keys)) {
      this.searchOrders.set(`${k}:asc`, [...this.active].sort((a, b) => cmp(a, b, 1) || tie(a, b)));
      this.searchOrders.set(`${k}:desc`, [...this.active].sort((a, b) => cmp(a, b, -1) || tie(a, b)));
    }
  }

  private groupUnique(entries: Entry[]): UniqueModelEntry[] {
    const groups = new Map<string, Entry[]>();
    for (const e of entries) push(groups, e.idLower, e);
    const out: UniqueModelEntry[] = [];
    for (const offers of groups.values()) {
      offers.sort((a, b) => nullsLast(a.o.pricing.prompt, b.o.pricing.prompt, 1)
        || nullsLast(a.o.pricing.completion, b.o.pricing.completion, 1) || cmpStr(a.o.gateway, b.o.gateway));
      const named = [...offers].sort((a, b) => a.gatewayRank - b.gatewayRank)[0];
      let fastest: Entry | null = null;
      for (const e of offers) if (e.avgMs !== null && (!fastest || e.avgMs < fastest.avgMs! || (e.avgMs === fastest.avgMs && e.o.gateway < fastest.o.gateway))) fastest = e;
      out.push({
        modelId: offers[0].o.modelId,
        name: named.o.name,
        nameLower: named.o.name.toLowerCase(),
        developer: offers[0].o.developer,
        offers,
        cheapest: offers[0].o.pricing.prompt !== null ? offers[0] : null,
        fastest,
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
