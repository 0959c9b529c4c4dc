/**
 * The catalog operations over one built Snapshot. Each scans a pre-sorted list with a cheap predicate, counts
 * the matches and materialises only the requested page, so no item is lost or repeated between pages and a
 * query costs one pass over the (pre-filtered) list.
 */
import { notFound } from '../errors.js';
import type { Entry } from './entry.js';
import type { ModelCategory } from './categories.js';
import { nullsLast } from './categories.js';
import type { Snapshot, SearchSort, SortOrder, UniqueModelEntry, UniqueSort } from './snapshot.js';
import { modelRecord, openaiModel, uniqueModel, providerOffer, decimal } from './views.js';

export interface Ctx {
  snap: Snapshot;
  gatewayName(id: string): string;
  /** Routable now: gateway configured and its breaker not open. */
  routable(gateway: string): boolean;
}

export function page<T>(list: readonly T[], pred: ((x: T) => boolean) | null, offset: number, limit: number) {
  if (!pred) return { items: list.slice(offset, offset + limit), total: list.length };
  const items: T[] = [];
  let total = 0;
  for (const x of list) {
    if (!pred(x)) continue;
    if (total >= offset && items.length < limit) items.push(x);
    total++;
  }
  return { items, total };
}

const cheapestBlended = (offers: Entry[]): Entry | null => {
  let best: Entry | null = null;
  for (const e of offers) if (!best || nullsLast(e.blended, best.blended, 1) < 0 || (e.blended === best.blended && e.o.gateway < best.o.gateway)) best = e;
  return best;
};

const byBlended = (a: Entry, b: Entry) => nullsLast(a.blended, b.blended, 1) || (a.o.gateway < b.o.gateway ? -1 : a.o.gateway > b.o.gateway ? 1 : 0);

export interface ListModelsQuery {
  provider: string | null;
  isPrivate: boolean | null;
  gateway: string | null;
  unique: boolean;
  hub: boolean;
  offset: number;
  limit: number;
}

export function listModels(c: Ctx, q: ListModelsQuery) {
  const dev = q.provider?.toLowerCase() ?? null;
  const privOk = (e: Entry) => q.isPrivate === null || e.o.isPrivate === q.isPrivate;
  let models: Array<Record<string, unknown>>;
  let total: number;
  let data: Array<ReturnType<typeof openaiModel>>;
  if (q.unique && q.gateway === null) {
    const pick = (u: UniqueModelEntry) => (dev !== null && u.developer.toLowerCase() !== dev ? [] : u.offers.filter(privOk));
    const r = page(c.snap.unique.active, (u) => pick(u).length > 0, q.offset, q.limit);
    total = r.total;
    const tops = r.items.map((u) => ({ offers: pick(u), top: cheapestBlended(pick(u))! }));
    models = tops.map(({ offers, top }) => ({
      ...modelRecord(top, { hub: q.hub }),
      providers: offers.map((e) => providerOffer(e, c.gatewayName(e.o.gateway))),
    }));
    data = tops.map(({ top }) => openaiModel(top));
  } else {
    const base = q.gateway !== null ? c.snap.byGateway.get(q.gateway) ?? [] : dev !== null ? c.snap.byDeveloper.get(dev) ?? [] : c.snap.active;
    const r = page(base, (e) => e.o.isActive && privOk(e) && (dev === null || e.o.developer.toLowerCase() === dev), q.offset, q.limit);
    total = r.total;
    models = r.items.map((e) => modelRecord(e, { hub: q.hub }));
    data = r.items.map(openaiModel);
  }
  return { object: 'list', data, models, total, limit: q.limit, offset: q.offset, gateway: q.gateway ?? 'all' };
}

export interface SearchQuery {
  q: string | null;
  modality: 'text' | 'image' | 'audio' | 'video' | 'multimodal' | null;
  isPrivate: boolean | null;
  minContext: number | null;
  maxContext: number | null;
  minPrice: number | null;
  maxPrice: number | null;
  gateway: string | null;
  sortBy: SearchSort;
  order: SortOrder;
  offset: number;
  limit: number;
}

function modalityOk(e: Entry, m: SearchQuery['modality']): boolean {
  const { input, output } = e.o.modalities;
  if (m === null) return true;
  if (m === 'text') return output.includes('text');
  if (m === 'multimodal') return input.length >= 2;
  return input.includes(m) || output.includes(m);
}

export function searchModels(c: Ctx, s: SearchQuery) {
  const text = s.q?.toLowerCase() ?? '';
  const ctxBound = s.minContext !== null || s.maxContext !== null;
  const priceBound = s.minPrice !== null || s.maxPrice !== null;
  const pred = (e: Entry) => {
    if (s.gateway !== null && e.o.gateway !== s.gateway) return false;
    if (text && !e.haystack.includes(text)) return false;
    if (s.isPrivate !== null && e.o.isPrivate !== s.isPrivate) return false;
    if (!modalityOk(e, s.modality)) return false;
    if (ctxBound) {
      const ctx = e.o.contextLength;
      if (ctx === null || (s.minContext !== null && ctx < s.minContext) || (s.maxContext !== null && ctx > s.maxContext)) return false;
    }
    if (priceBound) {
      const p = e.o.pricing.prompt;
      if (p === null || (s.minPrice !== null && p < s.minPrice) || (s.maxPrice !== null && p > s.maxPrice)) return false;
    }
    return true;
  };
  const r = page(c.snap.searchOrders.get(`${s.sortBy}:${s.order}`)!, pred, s.offset, s.limit);
  return {
    models: r.items.map((e) => modelRecord(e)),
    total: r.total, limit: s.limit, offset: s.offset,
    filters: {
      q: s.q, modality: s.modality, is_private: s.isPrivate, min_context: s.minContext, max_context: s.maxContext,
      min_price: s.minPrice, max_price: s.maxPrice, gateway: s.gateway ?? 'all', sort_by: s.sortBy, order: s.order,
    },
  };
}

export function byCategory(c: Ctx, category: ModelCategory, includeInactive: boolean, limit: number) {
  const lists = c.snap.categories.get(category)!;
  const list = includeInactive ? lists.all : lists.active;
  return { category, models: list.slice(0, limit).map((e) => modelRecord(e)), total: list.length, limit };
}

export function lowLatency(c: Ctx, ultraOnly: boolean, alternatives: boolean, offset: number, limit: number) {
  const r = page(c.snap.lowLatency, ultraOnly ? (e) => e.avgMs! < 100 : null, offset, limit);
  return {
    models: r.items.map((e) => ({ ...modelRecord(e), latency_tier: e.avgMs! < 100 ? 'ultra' : 'low' })),
    total: r.total, limit, offset,
    thresholds: { low_latency_ms: 500, ultra_low_latency_ms: 100 },
    ...(alternatives ? {
      alternatives: c.snap.alternatives.map((a) => ({ family: a.family, slow_model: a.slowModel, fast_alternatives: a.fastAlternatives })),
    } : {}),
  };
}

export interface UniqueQuery {
  offset: number;
  limit: number;
  minProviders: number;
  sortBy: UniqueSort;
  order: SortOrder;
  includeInactive: boolean;
}

export function listUnique(c: Ctx, q: UniqueQuery) {
  const list = c.snap.uniqueOrders.get(`${q.includeInactive ? 'all' : 'active'}:${q.sortBy}:${q.order}`)!;
  const r = page(list, q.minProviders > 1 ? (u) => u.offers.length >= q.minProviders : null, q.offset, q.limit);
  return { models: r.items.map((u) => uniqueModel(u, u.offers, c.gatewayName)), total: r.total, limit: q.limit, offset: q.offset };
}

/** Competition ranking (1, 2, 2, 4) of values, best first; null values get no rank. */
function rankValues(values: Array<number | null>, better: 'low' | 'high'): Array<number | null> {
  return values.map((v) => (v === null ? null : 1 + values.filter((w) => w !== null && (better === 'low' ? w < v : w > v)).length));
}

export function batchCompare(c: Ctx, ids: string[], criteria: 'price' | 'context' | 'availability') {
  const seen = new Set<string>();
  const unique = ids.filter((id) => (seen.has(id) ? false : (seen.add(id), true)));
  const rows = unique.map((id) => {
    const offers = (c.snap.byModel.get(id.toLowerCase()) ?? []).filter((e) => e.o.isActive);
    const cheap = cheapestBlended(offers);
    const priced = cheap && cheap.blended !== null ? cheap : null;
    const ctxs = offers.map((e) => e.o.contextLength).filter((v): v is number => v !== null);
    const known = offers.filter((e) => e.health !== 'unknown');
    return {
      model_id: id,
      found: offers.length > 0,
      name: offers.length ? [...offers].sort((a, b) => a.gatewayRank - b.gatewayRank)[0].o.name : null,
      offers: offers.length,
      cheapest_gateway: priced?.o.gateway ?? null,
      prompt_price: decimal(priced?.o.pricing.prompt ?? null),
      completion_price: decimal(priced?.o.pricing.completion ?? null),
      context_length: ctxs.length ? Math.max(...ctxs) : null,
      availability: known.length ? known.filter((e) => e.health === 'healthy').length / known.length : null,
      blended: priced?.blended ?? null,
    };
  });
  const values = rows.map((r) => (criteria === 'price' ? r.blended : criteria === 'context' ? r.context_length : r.availability));
  const ranks = rankValues(values, criteria === 'price' ? 'low' : 'high');
  const models = rows.map(({ blended: _b, ...r }, i) => ({ ...r, rank: ranks[i] }));
  return { criteria, models, best: models.find((m) => m.rank === 1)?.model_id ?? null };
}

function offersOf(c: Ctx, modelId: string): Entry[] {
  const offers = c.snap.byModel.get(modelId.toLowerCase());
  if (!offers?.length) throw notFound(`Model ${modelId} is not in the catalog.`);
  return offers;
}

export function compareAcrossGateways(c: Ctx, modelId: string, gateways: string[] | null) {
  const offers = offersOf(c, modelId).filter((e) => gateways === null || gateways.includes(e.o.gateway)).sort(byBlended);
  if (!offers.length) throw notFound(`No selected gateway offers ${modelId}.`);
  const priced = offers.filter((e) => e.blended !== null);
  const cheapest = priced[0] ?? null;
  const dearest = priced.reduce<Entry | null>((m, e) => (!m || e.blended! > m.blended! ? e : m), null);
  const savings = priced.length >= 2 && dearest!.blended! > 0
    ? Math.round(((dearest!.blended! - cheapest!.blended!) / dearest!.blended!) * 10000) / 100 : null;
  return {
    model_id: offers[0].o.modelId,
    gateways: offers.map((e) => ({
      gateway: e.o.gateway,
      gateway_model_id: e.o.upstreamModel,
      pricing: (modelRecord(e) as { pricing: unknown }).pricing,
      context_length: e.o.contextLength,
      health_status: e.health,
      average_response_time_ms: e.avgMs,
      available: e.o.isActive && c.routable(e.o.gateway),
    })),
    cheapest_gateway: cheapest?.o.gateway ?? null,
    most_expensive_gateway: dearest?.o.gateway ?? null,
    savings_percent: savings,
  };
}

const HEALTH_ORDER = { healthy: 0, unknown: 1, degraded: 2, unhealthy: 3 } as const;

export function getModel(c: Ctx, modelId: string, gateway: string | null, hub: boolean) {
  const offers = [...offersOf(c, modelId)].sort(byBlended);
  let chosen: Entry | undefined;
  if (gateway !== null) {
    chosen = offers.find((e) => e.o.gateway === gateway);
    if (!chosen) throw notFound(`Gateway ${gateway} does not offer ${modelId}.`);
  } else {
    const routable = offers.filter((e) => e.o.isActive && c.routable(e.o.gateway))
      .sort((a, b) => HEALTH_ORDER[a.health] - HEALTH_ORDER[b.health] || nullsLast(a.blended, b.blended, 1) || a.gatewayRank - b.gatewayRank);
    chosen = routable[0] ?? offers[0];
  }
  return { model: modelRecord(chosen, { hub }), offers: offers.map((e) => modelRecord(e)) };
}

export function developerModels(c: Ctx, developer: string, gateway: string | null, hub: boolean, offset: number, limit: number) {
  const dev = developer.toLowerCase();
  const all = c.snap.byDeveloper.get(dev);
  if (!all) throw notFound(`The catalog has no model of developer ${developer}.`);
  const r = page(all, (e) => e.o.isActive && (gateway === null || e.o.gateway === gateway), offset, limit);
  return { developer: dev, models: r.items.map((e) => modelRecord(e, { hub })), total: r.total, limit, offset };
}

export interface DeveloperCard {
  name: string;
  siteUrl: string | null;
  logoUrl: string | null;
  moderated: boolean;
}

/** Providers (developers) with at least one active model on the selected gateway(s). */
export function listProviders(c: Ctx, developers: Map<string, DeveloperCard>, moderatedOnly: boolean, gateway: string | null, offset: number, limit: number) {
  const rows: Array<{ slug: string; name: string; site_url: string | null; logo_url: string | null; model_count: number; gateways: string[]; moderated: boolean }> = [];
  for (const [slug, entries] of c.snap.byDeveloper) {
    const card = developers.get(slug);
    if (moderatedOnly && !card?.moderated) continue;
    const models = new Set<string>();
    const gws = new Set<string>();
    for (const e of entries) {
      if (!e.o.isActive || (gateway !== null && e.o.gateway !== gateway)) continue;
      models.add(e.idLower);
      gws.add(e.o.gateway);
    }
    if (!models.size) continue;
    rows.push({
      slug, name: card?.name ?? slug, site_url: card?.siteUrl ?? null, logo_url: card?.logoUrl ?? null,
      model_count: models.size, gateways: [...gws].sort(), moderated: card?.moderated ?? false,
    });
  }
  rows.sort((a, b) => b.model_count - a.model_count || (a.slug < b.slug ? -1 : 1));
  return { providers: rows.slice(offset, offset + limit), total: rows.length, limit, offset };
}
