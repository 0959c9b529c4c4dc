/**
 * Where rate-limit state lives: in this process (default) or in Redis (REDIS_URL, shared by every instance).
 * Both count in one-second buckets over a sliding 60-second window, so "N per minute" means at most N in any
 * 60 seconds, whatever instance served them; concurrency slots are leases that lapse if their process dies.
 */

export const WINDOW_SECONDS = 60;
/** A concurrency lease lives this long unless its process renews it (a crashed process's slots come back). */
export const LEASE_TTL_MS = 30_000;

export interface WindowCount {
  /** The request was counted (always true for a read). */
  allowed: boolean;
  /** Units in the window, this request included when allowed. */
  count: number;
  /** ms until the oldest counted unit leaves the window (0 when none is counted). */
  resetMs: number;
}

/**
 * Where the counts live. `take`, `read` and `acquire` are on every admitted request: the memory backend answers them
 * at once (a plain value), Redis with a promise; the limiter awaits only a promise (each await is a turn of the
 * microtask queue on the request's path to the upstream).
 */
export interface LimitBackend {
  /** Counts one request in `key`'s window if fewer than `limit` are counted; never more than `limit`. */
  take(key: string, limit: number, nowMs: number): WindowCount | Promise<WindowCount>;
  /** Adds `n` units (tokens) to `key`'s window unconditionally. */
  add(key: string, n: number, nowMs: number): Promise<void>;
  /** Units in `key`'s window. */
  read(key: string, nowMs: number): WindowCount | Promise<WindowCount>;
  /** Claims one of `limit` concurrency slots of `key` under `lease`; false when all are taken. */
  acquire(key: string, lease: string, limit: number, nowMs: number): boolean | Promise<boolean>;
  release(key: string, lease: string): Promise<void>;
  /** Extends the given live leases of `key` (their process is alive). */
  renew(key: string, leases: string[], nowMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * One key's sliding window: the one-second buckets in time order (a queue, oldest first) and their running total,
 * so a request costs O(1) and allocates nothing — every request of a key passes through here.
 */
class Window {
  secs: number[] = [];
  counts: number[] = [];
  head = 0;
  total = 0;

  /** Drops the buckets that left the window ending at `nowSec`; the oldest counted second, or null. */
  expire(nowSec: number): number | null {
    const { secs, counts } = this;
    while (this.head < secs.length && secs[this.head] <= nowSec - WINDOW_SECONDS) this.total -= counts[this.head++];
    if (this.head === secs.length) {
      secs.length = counts.length = this.head = this.total = 0;
      return null;
    }
    if (this.head > 32) {
      secs.splice(0, this.head);
      counts.splice(0, this.head);
      this.head = 0;
    }
    return secs[this.head];
  }

  add(nowSec: number, n: number): void {
    const last = this.secs.length - 1;
    // a clock that stepped back counts into the newest bucket rather than breaking the order
    if (last >= this.head && this.secs[last] >= nowSec) this.counts[last] += n;
    else {
      this.secs.push(nowSec);
      this.counts.push(n);
    }
    this.total += n;
  }
}

/** The lease maps' count (keys with leases now or before) from which a new key's first lease drops the empty ones. */
const LEASE_KEYS_SWEEP_AT = 1_000;

/** Process-local state: exact for one instance. Empty windows are dropped so idle keys cost nothing. */
export class MemoryLimitBackend implements LimitBackend {
  private windows = new Map<string, Window>();
  private leases = new Map<string, Map<string, number>>();
  /** The next sweep of empty lease maps: at twice the count the last one left (amortised: never one per acquire). */
  private sweepLeasesAt = LEASE_KEYS_SWEEP_AT;

  /** `key`'s window after expiry, or undefined when nothing is counted (and the key is forgotten). */
  private live(key: string, nowSec: number): Window | undefined {
    const w = this.windows.get(key);
    if (w && w.expire(nowSec) === null) {
      this.windows.delete(key);
      return undefined;
    }
    return w;
  }

  private grow(key: string, w: Window | undefined, nowSec: number, n: number): void {
    if (!w) this.windows.set(key, (w = new Window()));
    w.add(nowSec, n);
  }

  take(key: string, limit: number, nowMs: number): WindowCount {
    const nowSec = Math.floor(nowMs / 1000);
    const w = this.live(key, nowSec);
    const count = w?.total ?? 0;
    const oldest = w ? w.secs[w.head] : null;
    if (count >= limit) return { allowed: false, count, resetMs: resetMs(oldest, nowMs) };
    this.grow(key, w, nowSec, 1);
    return { allowed: true, count: count + 1, resetMs: resetMs(oldest ?? nowSec, nowMs) };
  }

  async add(key: string, n: number, nowMs: number): Promise<void> {
    if (n <= 0) return;
    const nowSec = Math.floor(nowMs / 1000);
    this.grow(key, this.live(key, nowSec), nowSec, n);
  }

  read(key: string, nowMs: number): WindowCount {
    const w = this.live(key, Math.floor(nowMs / 1000));
    return { allowed: true, count: w?.total ?? 0, resetMs: resetMs(w ? w.secs[w.head] : null, nowMs) };
  }

  acquire(key: string, lease: string, limit: number, nowMs: number): boolean {
    let held = this.leases.get(key);
    if (!held && this.leases.size >= this.sweepLeasesAt) this.dropIdleLeaseKeys();
    // Lapsed leases (their process stopped renewing them) are looked for only when they would make a difference.
    if (held && held.size >= limit) for (const [id, until] of held) if (until <= nowMs) held.delete(id);
    if ((held?.size ?? 0) >= limit) return false;
    if (!held) this.leases.set(key, (held = new Map<string, number>()));
    held.set(lease, nowMs + LEASE_TTL_MS);
    return true;
  }

  /**
   * A key's map stays when its last lease goes (dropped with the others found empty once LEASE_KEYS_SWEEP_AT keys, or
   * twice the count the last sweep left, have one): one request at a time, a map made, stored and deleted with each
   * request cost a Map's store and delete and the delete's shrink of its table (docs/PERFORMANCE.md, session 54).
   */
  async release(key: string, lease: string): Promise<void> {
    this.leases.get(key)?.delete(lease);
  }

  private dropIdleLeaseKeys(): void {
    for (const [key, held] of this.leases) if (!held.size) this.leases.delete(key);
    this.sweepLeasesAt = Math.max(LEASE_KEYS_SWEEP_AT, 2 * this.leases.size);
  }

  async renew(key: string, leases: string[], nowMs: number): Promise<void> {
    const held = this.leases.get(key);
    for (const id of leases) if (held?.has(id)) held.set(id, nowMs + LEASE_TTL_MS);
  }

  async close(): Promise<void> {
    this.windows.clear();
    this.leases.clear();
  }
}

export function resetMs(oldestSec: number | null, nowMs: number): number {
  return oldestSec === null ? 0 : Math.max(0, (oldestSec + WINDOW_SECONDS) * 1000 - nowMs);
}
