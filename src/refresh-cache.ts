/**
 * A synchronous cache of what every request looks up in the database (an API key's principal: src/auth.ts; a key's
 * rate limits: src/limits/limiter.ts). A fresh entry is answered at once, as a plain value: no await on the request's
 * path. An entry is fresh for `ttlMs` after its read began; once more than half of that has gone, the next lookup
 * starts one read in the background and is answered from the entry meanwhile, so a key in use does not wait for its
 * read every TTL (an expired entry cost its request ~47 µs on SQLite and ~475 µs on PostgreSQL: docs/PERFORMANCE.md,
 * session 55). What is answered is never older than the TTL.
 *
 * `invalidate` (a change made in this process: a revocation, new limits) drops entries, and a read begun before it
 * lands without being cached, so it cannot put back what the change replaced. A failed background read leaves the
 * entry to its TTL, and the next lookup tries again; past the TTL the read is the caller's, and so is its failure.
 */
export class RefreshAheadCache<K, V> {
  private readonly entries = new Map<K, CacheEntry<V>>();
  /** Bumped by `invalidate`: a read begun before it does not cache what it read. */
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly read: (key: K) => Promise<V>,
    private readonly now: () => number,
    private readonly onBackgroundError: (err: unknown) => void = () => {},
    /** Past this many entries all are dropped (and read again as they come). */
    private readonly maxEntries = 10_000,
  ) {}

  /** `key`'s entry while it is fresh (past half its TTL, with a background read started), else undefined. */
  fresh(key: K): CacheEntry<V> | undefined {
    const hit = this.entries.get(key);
    if (hit === undefined) return undefined;
    const age = this.now() - hit.at;
    if (age > this.ttlMs) return undefined;
    if (!hit.refreshing && 2 * age > this.ttlMs) this.refresh(key, hit);
    return hit;
  }

  /** The fresh value at once, else a read (a promise). */
  get(key: K): V | Promise<V> {
    const hit = this.fresh(key);
    return hit !== undefined ? hit.value : this.load(key);
  }

  /** Reads `key`'s value now; cached as of when the read began, unless `invalidate` came meanwhile. */
  async load(key: K): Promise<V> {
    const generation = this.generation;
    const at = this.now();
    const value = await this.read(key);
    if (generation === this.generation) {
      if (this.entries.size > this.maxEntries) this.entries.clear();
      this.entries.set(key, { value, at, refreshing: false });
    }
    return value;
  }

  /** Drops `key`'s entry, or every entry without a key; reads begun before this are not cached. */
  invalidate(key?: K): void {
    this.generation++;
    if (key === undefined) this.entries.clear();
    else this.entries.delete(key);
  }

  private refresh(key: K, hit: CacheEntry<V>): void {
    hit.refreshing = true;
    // A read that landed replaced the entry; one that failed, or that an invalidation made stale (not cached), frees
    // it for the next lookup's read.
    const done = () => { hit.refreshing = false; };
    this.load(key).then(done, (err) => {
      done();
      this.onBackgroundError(err);
    });
  }
}

export interface CacheEntry<V> {
  readonly value: V;
  /** When the read that made it began. */
  readonly at: number;
  /** A read of its key is under way in the background. */
  refreshing: boolean;
}
