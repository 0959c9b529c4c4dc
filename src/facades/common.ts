/**
 * What the catalog facades (model hub, partner registry) share: a bounded TTL cache with in-flight
 * de-duplication, and one mapping from upstream failures to the gateway's 502/504 errors.
 */
import { ApiError } from '../errors.js';
import { UpstreamError } from '../engine/types.js';

/**
 * A TTL cache bounded to `maxEntries`: a hit moves the entry to the back of the Map's insertion order, and an
 * insert beyond the bound evicts from the front, so the least recently used entries go first. Concurrent
 * misses for one key share a single load, so a burst of identical requests costs the upstream one call.
 * Failed loads are not cached.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  private readonly loading = new Map<string, Promise<V>>();

  constructor(private readonly ttlMs: number, private readonly maxEntries: number) {}

  get size(): number {
    return this.entries.size;
  }

  async getOrLoad(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && hit.expires > Date.now()) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    if (hit) this.entries.delete(key);
    const pending = this.loading.get(key);
    if (pending) return pending;
    const p = (async () => {
      try {
        const value = await load();
        if (this.ttlMs > 0) this.put(key, value);
        return value;
      } finally {
        this.loading.delete(key);
      }
    })();
    this.loading.set(key, p);
    return p;
  }

  private put(key: string, value: V): void {
    this.entries.set(key, { value, expires: Date.now() + this.ttlMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  clear(): void {
    this.entries.clear();
  }
}

/**
 * An upstream failure as the client sees it: a timeout is 504, anything else (connection refused, 5xx,
 * malformed body, refused credentials) is 502. The upstream's own body never reaches the client.
 */
export function facadeError(err: unknown, service: string): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof UpstreamError) {
    if (err.kind === 'timeout') {
      return new ApiError(504, 'upstream_error', `The ${service} did not answer in time.`, 'upstream_timeout');
    }
    const why = err.kind === 'connection' ? 'could not be reached'
      : err.kind === 'invalid_response' ? `gave an unusable answer (${err.message})`
      : `failed${err.status ? ` (upstream HTTP ${err.status})` : ''}`;
    return new ApiError(502, 'upstream_error', `The ${service} ${why}.`, 'upstream_error');
  }
  throw err;
}
