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

const byNullable = (a: number | null, b: number | null): number => {
  if (a === null) return b === null ? 0 : 1;
  if (b === null) return -1;
  return a - b;
};

/** `entries` ordered by `mode` (a new array; the input is not changed). */
export function orderByMode(entries: Entry[], mode: RouterMode): Entry[] {
  const score = new Map<Entry, number>();
  if (mode === 'balanced') {
    const price = ranks(entries.map((e) => e.blended), 1);
    const latency = ranks(entries.map((e) => e.avgMs), 0.5);
    entries.forEach((e, i) => score.set(e, (price[i] + latency[i]) / 2));
  }
  const modeKey = (a: Entry, b: Entry): number => {
    switch (mode) {
      case 'cheapest': return byNullable(a.blended, b.blended);
      case 'fastest': return byNullable(a.avgMs, b.avgMs) || byNullable(a.blended, b.blended);
      case 'balanced': return score.get(a)! - score.get(b)! || byNullable(a.blended, b.blended);
      case 'reliable': return (b.successRate ?? 0.5) - (a.successRate ?? 0.5) || byNullable(a.blended, b.blended);
    }
  };
  return [...entries].sort((a, b) =>
    Number(b.configured) - Number(a.configured)
    || Number(b.o.isActive) - Number(a.o.isActive)
    || HEALTH_RANK[a.health] - HEALTH_RANK[b.health]
    || modeKey(a, b)
    || a.gatewayRank - b.gatewayRank
    || (a.o.gateway < b.o.gateway ? -1 : a.o.gateway > b.o.gateway ? 1 : 0)
    || a.order - b.order);
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
