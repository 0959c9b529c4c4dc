/**
 * One offer as the built catalog holds it: the offer plus everything queries sort and filter on, computed
 * once per rebuild (sync or health refresh) so requests only scan and slice.
 */
import type { CatalogOffer } from './seeds.js';
import type { ModelCategory } from './categories.js';

export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy' | 'unknown';

/** Measured health of one offer, from the model_health table. */
export interface OfferHealth {
  status: HealthStatus;
  /** Mean response time in ms over recorded calls; null when none was measured. */
  avgMs: number | null;
  /** successes / calls; null without calls. */
  successRate: number | null;
  calls: number;
}

export const UNKNOWN_HEALTH: OfferHealth = { status: 'unknown', avgMs: null, successRate: null, calls: 0 };

export interface Entry {
  o: CatalogOffer;
  /** Position in the catalog's base order (id, then gateway): the final tie-break everywhere. */
  order: number;
  idLower: string;
  nameLower: string;
  /** Lower-cased id, name, developer and description, for `q`. */
  haystack: string;
  blended: number | null;
  health: HealthStatus;
  avgMs: number | null;
  successRate: number | null;
  /** Tags from catalog data alone (all but `fastest`), fixed between syncs. */
  baseCategories: ModelCategory[];
  /** All tags: base plus `fastest` from measured latency. */
  categories: ModelCategory[];
  /** Requests recorded for the canonical model (all gateways) in the last 7 days. */
  popularity: number;
  configured: boolean;
  /** A general chat model (text in, text out; not an embedding, speech, guard or image model). */
  chat: boolean;
  /** Index of the gateway in GET /v1/gateways order (fast first). */
  gatewayRank: number;
  /** Keys under which health and usage rows may name this offer: by upstream id, by canonical id. */
  keys: [string, string];
}

const NOT_CHAT = /embed|whisper|tts|transcri|moderation|rerank|guard|safeguard|dall-e|image|orpheus|imagine|lyria|ocr/i;

export function isChatOffer(o: CatalogOffer): boolean {
  return o.modalities.input.includes('text') && o.modalities.output.includes('text') && !NOT_CHAT.test(o.upstreamModel);
}

/**
 * Health status of an offer from its counters: `unhealthy` after 3 failures in a row or under 50 % success,
 * `degraded` after a failure in a row or under 90 % success, else `healthy`; `unknown` without calls.
 */
export function healthFromCounters(row: {
  calls: number; successes: number; total_latency_ms: number; consecutive_failures: number;
}): OfferHealth {
  const calls = Number(row.calls);
  if (!calls) return UNKNOWN_HEALTH;
  const successRate = Number(row.successes) / calls;
  const total = Number(row.total_latency_ms);
  const avgMs = total > 0 ? Math.round((total / calls) * 100) / 100 : null;
  const streak = Number(row.consecutive_failures);
  const status: HealthStatus = streak >= 3 || successRate < 0.5 ? 'unhealthy' : streak >= 1 || successRate < 0.9 ? 'degraded' : 'healthy';
  return { status, avgMs, successRate, calls };
}
