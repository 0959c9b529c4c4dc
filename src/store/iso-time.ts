/**
 * The time as an ISO 8601 string (`2026-11-26T08:30:12.345Z`, what `Date#toISOString` gives), made from a cached
 * prefix that changes once per second. The credit hold and settle stamp every request's rows with it, and
 * `toISOString` (a runtime call) cost ~0.65 µs warm in a micro-benchmark and 15–25 µs per stream in profiles of
 * the gateway under streams (docs/PERFORMANCE.md, session 16); the cached form costs ~20 ns.
 */
let second = Number.NaN;
let prefix = '';

export function isoTime(ms: number = Date.now()): string {
  // Outside years 0000-9999 toISOString writes a signed six-digit year: leave those to it.
  if (!(ms >= 0 && ms < 253402300800000)) return new Date(ms).toISOString();
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    second = s;
    prefix = new Date(s * 1000).toISOString().slice(0, 20); // through the seconds and the dot
  }
  const frac = Math.floor(ms) - s * 1000;
  return `${prefix}${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}Z`;
}
