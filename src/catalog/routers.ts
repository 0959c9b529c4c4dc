/**
 * Router modes: how candidate offers are ordered into the engine's failover list. Every mode first puts
 * configured gateways before unconfigured ones, active offers before inactive ones, and healthy (or not yet
 * measured) offers before degraded, degraded before unhealthy; the mode decides the rest:
 * - cheapest: blended price ascending (unknown last);
 * - fastest: measured average response time ascending (unmeasured after measured), then blended price;
 * - balanced: mean of the price rank and the latency rank among the candidates (0 = best, 1 = worst; an
 *   unknown price ranks 1, an unmeasured latency 0.5), then blended price;
 * - reliable: success rate descending (unmeasured = 0.5), then blended price.
 * Final ties: fast-priority gateways first, then gateway id, then model id.
 */
import type { Entry } from './entry.js';
import type { RouterInfo, RouterMode } from './seeds.js';

const HEALTH_RANK = { healthy: 0, unknown: 0, degraded: 1, unhealthy: 2 } as const;

export interface RouterChoice {
  router: RouterInfo;
  /** The model after `router:<mode>/`, when given. */
  model?: string;
}

/** Parses `router:<mode>` or `router:<mode>/<model>` against the routers' ids and aliases. */
export function parseRouter(model: string, routers: RouterInfo[]): RouterChoice | null | undefined {
  if (!/^router:/i.test(model)) return undefined; // not a router string at all
  const rest = model.slice('router:'.length);
  const slash = rest.indexOf('/');
  const word = (slash < 0 ? rest : rest.slice(0, slash)).toLowerCase();
  const router = routers.find((r) => r.id === word || r.aliases.includes(word));
  if (!router) return null;
  const target = slash < 0 ? '' : rest.slice(slash + 1);
  return target ? { router, model: target } : { router };
}

/** Rank in [0, 1] of each value among the known ones (equal values share the lowest rank). */
function ranks(values: Array<number | null>, unknown: number): number[] {
  const known = [...new Set(values.filter((v): v is number => v !== null))].sort((a, b) => a - b);
  const pos = new Map<number, number>();
  known.forEach((v, i) => pos.set(v, known.length > 1 ? i / (known.length - 1) : 0));
  return values.map((v) => (v === null ? unknown : pos.get(v)!));
}

/**
 * `entries` ordered by `mode` (a new array; the input is not changed). Sort keys are computed once into
 * typed arrays (nulls as +Infinity, so they sort last), which keeps ordering thousands of offers cheap.
 */
export function orderByMode(entries: Entry[], mode: RouterMode): Entry[] {
  const n = entries.length;
  const prefix = new Float64Array(n);
  const k1 = new Float64Array(n);
  const k2 = new Float64Array(n);
  const tie = new Float64Array(n);
  const gatewayIds = [...new Set(entries.map((e) => e.o.gateway))].sort();
  const gid = new Map(gatewayIds.map((g, i) => [g, i]));
  const price = mode === 'balanced' ? ranks(entries.map((e) => e.blended), 1) : [];
  const latency = mode === 'balanced' ? ranks(entries.map((e) => e.avgMs), 0.5) : [];
  const inf = (v: number | null) => (v === null ? Infinity : v);
  for (let i = 0; i < n; i++) {
    const e = entries[i];
    prefix[i] = (e.configured ? 0 : 8) + (e.o.isActive ? 0 : 4) + HEALTH_RANK[e.health];
    const blended = inf(e.blended);
    switch (mode) {
      case 'cheapest': k1[i] = blended; k2[i] = 0; break;
      case 'fastest': k1[i] = inf(e.avgMs); k2[i] = blended; break;
      case 'balanced': k1[i] = (price[i] + latency[i]) / 2; k2[i] = blended; break;
      case 'reliable': k1[i] = -(e.successRate ?? 0.5); k2[i] = blended; break;
    }
    // gateway priority rank, then gateway id, then catalog order, folded into one exact number
    tie[i] = (e.gatewayRank * 1024 + gid.get(e.o.gateway)!) * 2 ** 24 + e.order;
  }
  // Infinity − Infinity is NaN, which is falsy: equal unknowns fall through to the next key.
  const idx = Array.from({ length: n }, (_, i) => i);
  idx.sort((a, b) => prefix[a] - prefix[b] || k1[a] - k1[b] || k2[a] - k2[b] || tie[a] - tie[b]);
  return idx.map((i) => entries[i]);
}

/** The wire description of a router (GET /v1/routers). */
export function routerView(r: RouterInfo) {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    modes: [r.mode],
    syntax: {
      primary: `router:${r.id}[/<model>]`,
      aliases: r.aliases.map((a) => `router:${a}[/<model>]`),
    },
    use_cases: r.useCases,
  };
}
