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

export interface LimitBackend {
  /** Counts one request in `key`'s window if fewer than `limit` are counted; never more than `limit`. */
  take(key: string, limit: number, nowMs: number): Promise<WindowCount>;
  /** Adds `n` units (tokens) to `key`'s window unconditionally. */
  add(key: string, n: number, nowMs: number): Promise<void>;
  /** Units in `key`'s window. */
  read(key: string, nowMs: number): Promise<WindowCount>;
  /** Claims one of `limit` concurrency slots of `key` under `lease`; false when all are taken. */
  acquire(key: string, lease: string, limit: number, nowMs: number): Promise<boolean>;
  release(key: string, lease: string): Promise<void>;
  /** Extends the given live leases of `key` (their process is alive). */
  renew(key: string, leases: string[], nowMs: number): Promise<void>;
  close(): Promise<void>;
}

type Buckets = Map<number, number>;

/** Process-local state: exact for one instance. Empty windows are dropped so idle keys cost nothing. */
export class MemoryLimitBackend implements LimitBackend {
  private windows = new Map<string, Buckets>();
  private leases = new Map<string, Map<string, number>>();

  private live(key: string, nowSec: number): { buckets: Buckets; count: number; oldest: number | null } {
    const buckets = this.windows.get(key) ?? new Map<number, number>();
    let count = 0;
    let oldest: number | null = null;
    for (const [sec, n] of buckets) {
      if (sec <= nowSec - WINDOW_SECONDS) buckets.delete(sec);
      else {
        count += n;
        if (oldest === null || sec < oldest) oldest = sec;
      }
    }
    if (!buckets.size) this.windows.delete(key);
    return { buckets, count, oldest };
  }

  async take(key: string, limit: number, nowMs: number): Promise<WindowCount> {
    const nowSec = Math.floor(nowMs / 1000);
    const w = this.live(key, nowSec);
    if (w.count >= limit) return { allowed: false, count: w.count, resetMs: resetMs(w.oldest, nowMs) };
    w.buckets.set(nowSec, (w.buckets.get(nowSec) ?? 0) + 1);
    this.windows.set(key, w.buckets);
    return { allowed: true, count: w.count + 1, resetMs: resetMs(w.oldest ?? nowSec, nowMs) };
  }

  async add(key: string, n: number, nowMs: number): Promise<void> {
    if (n <= 0) return;
    const nowSec = Math.floor(nowMs / 1000);
    const w = this.live(key, nowSec);
    w.buckets.set(nowSec, (w.buckets.get(nowSec) ?? 0) + n);
    this.windows.set(key, w.buckets);
  }

  async read(key: string, nowMs: number): Promise<WindowCount> {
    const w = this.live(key, Math.floor(nowMs / 1000));
    return { allowed: true, count: w.count, resetMs: resetMs(w.oldest, nowMs) };
  }

  async acquire(key: string, lease: string, limit: number, nowMs: number): Promise<boolean> {
    const held = this.leases.get(key) ?? new Map<string, number>();
    for (const [id, until] of held) if (until <= nowMs) held.delete(id);
    if (held.size >= limit) return false;
    held.set(lease, nowMs + LEASE_TTL_MS);
    this.leases.set(key, held);
    return true;
  }

  async release(key: string, lease: string): Promise<void> {
    const held = this.leases.get(key);
    if (!held) return;
    held.delete(lease);
    if (!held.size) this.leases.delete(key);
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
