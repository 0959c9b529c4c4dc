/**
 * Per-key rate limits: requests per minute, tokens per minute and concurrent requests. Defaults come from the
 * configuration; a key's own limits (api_key_limits, set by the admin operation) override them. Counting is
 * delegated to a LimitBackend (this process, or Redis shared by every instance).
 *
 * Order of checks, so a refused request never uses up another limit: tokens (read only) -> a concurrency slot
 * -> one request of the minute (the slot is given back if that refuses). Tokens are counted after the fact,
 * from the usage records (prompt + completion), so a request is refused once the minute's tokens are spent.
 * If the backend fails (Redis down), requests are let through and a warning is logged: limits protect
 * capacity, while credits, which protect money, are enforced by the database.
 */
import crypto from 'node:crypto';
import type { RateLimitDefaults } from '../config.js';
import type { Principal } from '../auth.js';
import type { Logger } from '../logger.js';
import type { KeyLimits, LimitRepo } from '../store/limits.js';
import type { KeyRepo } from '../store/keys.js';
import type { UsageRecord } from '../store/usage.js';
import { ApiError } from '../errors.js';
import { throttledWarn } from '../reliability/redis.js';
import type { LimitBackend, WindowCount } from './backend.js';
import { RefreshAheadCache } from '../refresh-cache.js';

export interface KeyLimitsView {
  key_id: number;
  overrides: KeyLimits;
  effective: { requests_per_minute: number; tokens_per_minute: number; concurrent_requests: number };
}

export interface Admission {
  /** X-RateLimit-* headers for the response. */
  headers: Record<string, string>;
  /** Gives back the concurrency slot (call once, when the response is over). */
  release(): void;
}

const RENEW_EVERY_MS = 10_000;
const OVERRIDE_TTL_MS = 5_000;

const secs = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** Concurrency lease ids: unique across instances (a random prefix per process) without a UUID per request. */
const LEASE_PREFIX = `${crypto.randomUUID()}:`;
let leaseSeq = 0;
/** A key's names in the backend (its window of tokens, of requests, and its leases'). */
interface KeyNames { key: string; tpm: string; rpm: string }
/** Names kept for at most this many keys (then forgotten all at once and made again as they come). */
const MAX_NAMES = 10_000;

export class RateLimiter {
  /** A key's limits in force, for OVERRIDE_TTL_MS, read again ahead of it (src/refresh-cache.ts). */
  private readonly overrides: RefreshAheadCache<number, RateLimitDefaults>;
  private readonly names = new Map<number, KeyNames>();
  /** Live concurrency leases of this process, per backend key, renewed so they outlive long streams. */
  private leases = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | undefined;
  private readonly warn: (err: unknown) => void;

  constructor(
    private readonly backend: LimitBackend,
    private readonly defaults: RateLimitDefaults,
    private readonly repo: LimitRepo,
    private readonly keys: Pick<KeyRepo, 'get'>,
    logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.warn = throttledWarn(logger, 'rate limits');
    this.overrides = new RefreshAheadCache(OVERRIDE_TTL_MS, (keyId) => this.load(keyId), () => this.now(), this.warn);
  }

  start(): void {
    this.timer ??= setInterval(() => void this.renew(), RENEW_EVERY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.backend.close();
  }

  /**
   * The limits in force for a key (overrides cached briefly; `forget` drops the cache after a change): at once when
   * cached, else a promise. A key in use has its limits read again in the background once they are half the TTL old
   * (the cached ones answer until then), so its requests do not wait for that read every TTL.
   */
  limitsFor(keyId: number): RateLimitDefaults | Promise<RateLimitDefaults> {
    return this.overrides.get(keyId);
  }

  /** A key's limits from the database: its own, else the defaults. */
  private async load(keyId: number): Promise<RateLimitDefaults> {
    const own = await this.repo.get(keyId);
    return {
      requestsPerMinute: own?.requests_per_minute ?? this.defaults.requestsPerMinute,
      tokensPerMinute: own?.tokens_per_minute ?? this.defaults.tokensPerMinute,
      concurrentRequests: own?.concurrent_requests ?? this.defaults.concurrentRequests,
    };
  }

  forget(keyId: number): void {
    this.overrides.invalidate(keyId);
  }

  /** The admin view of a key's limits; undefined for an unknown key. */
  async describe(keyId: number): Promise<KeyLimitsView | undefined> {
    if (!(await this.keys.get(keyId))) return undefined;
    const own = (await this.repo.get(keyId)) ?? { requests_per_minute: null, tokens_per_minute: null, concurrent_requests: null };
    this.forget(keyId);
    const eff = await this.limitsFor(keyId);
    return {
      key_id: keyId,
      overrides: own,
      effective: { requests_per_minute: eff.requestsPerMinute, tokens_per_minute: eff.tokensPerMinute, concurrent_requests: eff.concurrentRequests },
    };
  }

  /** Replaces a key's own limits (null = default); undefined for an unknown key. */
  async update(keyId: number, limits: Partial<KeyLimits>): Promise<KeyLimitsView | undefined> {
    if (!(await this.keys.get(keyId))) return undefined;
    await this.repo.set(keyId, {
      requests_per_minute: limits.requests_per_minute ?? null,
      tokens_per_minute: limits.tokens_per_minute ?? null,
      concurrent_requests: limits.concurrent_requests ?? null,
    });
    return this.describe(keyId);
  }

  /**
   * Admits one request of `principal` or throws a 429 ApiError (with Retry-After and X-RateLimit-*). Null for
   * callers without a key (guests, public operations) and for the admin credential, which are not limited here.
   */
  async admit(principal: Principal | null): Promise<Admission | null> {
    if (!principal || principal.admin) return null;
    const limits = this.limitsFor(principal.keyId);
    const lim = limits instanceof Promise ? await limits : limits;
    const { key, tpm, rpm } = this.namesOf(principal.keyId);
    const now = this.now();
    let lease: string | undefined;
    try {
      let tokens: WindowCount | undefined;
      if (lim.tokensPerMinute > 0) {
        const read = this.backend.read(tpm, now);
        tokens = read instanceof Promise ? await read : read;
        if (tokens.count >= lim.tokensPerMinute) {
          throw limited('tokens', `Token rate limit of ${lim.tokensPerMinute} tokens per minute reached for this key.`, tokens.resetMs,
            tokenHeaders(lim, tokens));
        }
      }
      if (lim.concurrentRequests > 0) {
        const id = LEASE_PREFIX + ++leaseSeq;
        const acquired = this.backend.acquire(key, id, lim.concurrentRequests, now);
        if (!(acquired instanceof Promise ? await acquired : acquired)) {
          throw limited('concurrency', `Concurrency limit of ${lim.concurrentRequests} requests in flight reached for this key.`, 1000, {});
        }
        lease = id;
        this.track(key, id);
      }
      let requests: WindowCount | undefined;
      if (lim.requestsPerMinute > 0) {
        const taken = this.backend.take(rpm, lim.requestsPerMinute, now);
        requests = taken instanceof Promise ? await taken : taken;
        if (!requests.allowed) {
          throw limited('requests', `Rate limit of ${lim.requestsPerMinute} requests per minute reached for this key.`, requests.resetMs,
            { ...requestHeaders(lim, requests), ...tokenHeaders(lim, tokens) });
        }
      }
      const headers = requestHeaders(lim, requests);
      if (tokens && lim.tokensPerMinute > 0) {
        headers['X-RateLimit-Limit-Tokens'] = `${lim.tokensPerMinute}`;
        headers['X-RateLimit-Remaining-Tokens'] = `${Math.max(0, lim.tokensPerMinute - tokens.count)}`;
      }
      let released = false;
      return {
        headers,
        release: () => {
          if (released || !lease) return;
          released = true;
          this.untrack(key, lease);
          this.backend.release(key, lease).catch(this.warn);
        },
      };
    } catch (err) {
      if (lease) {
        this.untrack(key, lease);
        this.backend.release(key, lease).catch(this.warn);
      }
      if (err instanceof ApiError) throw err;
      this.warn(err);
      return null;
    }
  }

  /** Counts the tokens of written usage records against their keys (the recorder calls this per batch). */
  countUsage(records: readonly UsageRecord[]): void {
    const now = this.now();
    for (const r of records) {
      const n = (r.prompt_tokens ?? 0) + (r.completion_tokens ?? 0);
      if (!r.key_id || n <= 0) continue;
      this.backend.add(this.namesOf(r.key_id).tpm, n, now).catch(this.warn);
    }
  }

  /**
   * A key's names in the backend, made once per key: built per request they were fresh strings, hashed anew by every
   * Map they were looked up in (docs/PERFORMANCE.md, session 31).
   */
  private namesOf(keyId: number): KeyNames {
    let names = this.names.get(keyId);
    if (!names) {
      if (this.names.size >= MAX_NAMES) this.names.clear();
      const key = `k${keyId}`;
      this.names.set(keyId, (names = { key, tpm: `${key}:tpm`, rpm: `${key}:rpm` }));
    }
    return names;
  }

  /*
   * A key's set stays when its last lease goes, and the renewal (every RENEW_EVERY_MS) drops the sets found empty:
   * one request at a time, a set made, stored and deleted with each request cost a Map's store and delete and the
   * delete's shrink of its table, in V8's runtime (docs/PERFORMANCE.md, session 54).
   */
  private track(key: string, lease: string) {
    let set = this.leases.get(key);
    if (!set) this.leases.set(key, (set = new Set<string>()));
    set.add(lease);
  }

  private untrack(key: string, lease: string) {
    this.leases.get(key)?.delete(lease);
  }

  private async renew(): Promise<void> {
    const now = this.now();
    for (const [key, set] of this.leases) {
      if (!set.size) this.leases.delete(key);
      else await this.backend.renew(key, [...set], now).catch(this.warn);
    }
  }
}

// Numbers made text by template literals: optimised code calls `String(n)`'s builtin, a template's conversion is
// inlined (docs/PERFORMANCE.md, session 54).
function requestHeaders(lim: RateLimitDefaults, w: WindowCount | undefined): Record<string, string> {
  if (!w || lim.requestsPerMinute <= 0) return {};
  return {
    'X-RateLimit-Limit': `${lim.requestsPerMinute}`,
    'X-RateLimit-Remaining': `${Math.max(0, lim.requestsPerMinute - w.count)}`,
    'X-RateLimit-Reset': `${Math.ceil(w.resetMs / 1000)}`,
  };
}

function tokenHeaders(lim: RateLimitDefaults, w: WindowCount | undefined): Record<string, string> {
  if (!w || lim.tokensPerMinute <= 0) return {};
  return {
    'X-RateLimit-Limit-Tokens': `${lim.tokensPerMinute}`,
    'X-RateLimit-Remaining-Tokens': `${Math.max(0, lim.tokensPerMinute - w.count)}`,
  };
}

function limited(which: 'requests' | 'tokens' | 'concurrency', message: string, waitMs: number, headers: Record<string, string>): ApiError {
  const retry = secs(waitMs);
  return new ApiError(429, 'rate_limit_error', `${message} Retry after ${retry}s.`, `rate_limit_${which}`, null,
    { ...headers, ...(which === 'requests' ? { 'X-RateLimit-Remaining': '0' } : {}), 'Retry-After': String(retry) });
}
