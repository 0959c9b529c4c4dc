/**
 * The thirteen derived category tags, by the rules stated in spec/openapi.yaml (listModelsByCategory).
 * Recomputed whenever the catalog or its health data changes, never per request.
 */
import type { Entry } from './entry.js';

export const CATEGORIES = [
  'cheapest', 'fastest', 'largest', 'smartest', 'reasoning', 'vision', 'free', 'coding', 'long-context',
  'balanced', 'flagship', 'mid', 'budget',
] as const;
export type ModelCategory = (typeof CATEGORIES)[number];

export const FLAGSHIP_MIN = 0.000003;
export const MID_MIN = 0.0000005;
const CODING = /\bcod(e|er|ex|ing)\b|codestral|devstral/i;

/**
 * Blended price (3 × prompt + completion) / 4 in USD per token; null unless both prices are known. Rounded at
 * 1e-15 so `3e-6` prices compare equal to the `3e-6` threshold despite float arithmetic.
 */
export function blendedPrice(prompt: number | null, completion: number | null): number | null {
  if (prompt === null || completion === null) return null;
  return Math.round(((3 * prompt + completion) / 4) * 1e15) / 1e15;
}

/** The value of the k-th best of `values` (k = ceil(10% of n)); members are those at least as good. */
function topDecile(values: number[], best: 'low' | 'high'): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => (best === 'low' ? a - b : b - a));
  return sorted[Math.ceil(sorted.length * 0.1) - 1];
}

export function median(values: number[]): number | null {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * Sets `baseCategories` on every entry: every tag except `fastest`, which alone depends on measured latency
 * (see applyFastest). Thresholds span all entries, active or not.
 */
export function assignBaseCategories(entries: Entry[]): void {
  const paid: number[] = [];
  const contexts: number[] = [];
  const scores: number[] = [];
  for (const e of entries) {
    if (e.blended !== null && e.blended > 0) paid.push(e.blended);
    if (e.o.contextLength !== null) contexts.push(e.o.contextLength);
    if (e.o.qualityScore !== null) scores.push(e.o.qualityScore);
  }
  const cheapMax = topDecile(paid, 'low');
  const largeMin = topDecile(contexts, 'high');
  const smartMin = topDecile(scores, 'high');
  const medianScore = median(scores);
  const medianPaid = median(paid);

  for (const e of entries) {
    const o = e.o;
    const b = e.blended;
    const ctx = o.contextLength;
    const q = o.qualityScore;
    const has: Record<Exclude<ModelCategory, 'fastest'>, boolean> = {
      cheapest: b !== null && b > 0 && cheapMax !== null && b <= cheapMax,
      largest: ctx !== null && largeMin !== null && ctx >= largeMin,
      smartest: q !== null && smartMin !== null && q >= smartMin,
      reasoning: o.capabilities.reasoning,
      vision: o.capabilities.vision,
      free: o.pricing.prompt === 0 && o.pricing.completion === 0,
      coding: CODING.test(o.modelId) || CODING.test(o.name) || (o.description !== null && CODING.test(o.description)),
      'long-context': ctx !== null && ctx >= 128_000,
      balanced: q !== null && medianScore !== null && q > medianScore && b !== null && medianPaid !== null && b < medianPaid,
      flagship: b !== null && b >= FLAGSHIP_MIN,
      mid: b !== null && b >= MID_MIN && b < FLAGSHIP_MIN,
      budget: b !== null && b > 0 && b < MID_MIN,
    };
    e.baseCategories = CATEGORIES.filter((c) => c !== 'fastest' && has[c]);
  }
}

/**
 * Sets `categories` = base tags plus `fastest` (measured average under 500 ms, or among the fastest 10% of
 * measured entries), in CATEGORIES order. Returns the entries tagged `fastest`.
 */
export function applyFastest(entries: Entry[]): Entry[] {
  const latencies: number[] = [];
  for (const e of entries) if (e.avgMs !== null) latencies.push(e.avgMs);
  const fastMax = topDecile(latencies, 'low');
  const fast: Entry[] = [];
  for (const e of entries) {
    const isFast = e.avgMs !== null && (e.avgMs < 500 || (fastMax !== null && e.avgMs <= fastMax));
    if (isFast) fast.push(e);
    e.categories = isFast ? CATEGORIES.filter((c) => c === 'fastest' || e.baseCategories.includes(c)) : e.baseCategories;
  }
  return fast;
}

const nullsLast = (a: number | null, b: number | null, dir: 1 | -1): number => {
  if (a === null) return b === null ? 0 : 1;
  if (b === null) return -1;
  return (a - b) * dir;
};

/** The order each category's list is shown in (ties by id, then gateway). */
export function categoryComparator(c: ModelCategory): (x: Entry, y: Entry) => number {
  const tie = (x: Entry, y: Entry) => x.order - y.order;
  switch (c) {
    case 'free': case 'cheapest': case 'budget': case 'mid': case 'flagship':
      return (x, y) => nullsLast(x.blended, y.blended, 1) || tie(x, y);
    case 'fastest':
      return (x, y) => nullsLast(x.avgMs, y.avgMs, 1) || tie(x, y);
    case 'largest': case 'long-context':
      return (x, y) => nullsLast(x.o.contextLength, y.o.contextLength, -1) || tie(x, y);
    case 'smartest': case 'balanced': case 'reasoning': case 'vision': case 'coding':
      return (x, y) => nullsLast(x.o.qualityScore, y.o.qualityScore, -1) || tie(x, y);
  }
}

export { nullsLast };
