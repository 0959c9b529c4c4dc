/**
 * A circuit breaker per (gateway, model): `failureThreshold` consecutive failures open it; after `cooldownMs`
 * one trial call is let through (half-open); its success closes the breaker, its failure opens it again.
 */
export type BreakerState = 'closed' | 'open' | 'half_open';

export type BreakerView = { gateway: string; model: string; state: BreakerState; failures: number };

/**
 * What the engine needs of circuit breakers. `Breakers` (below) keeps them in this process; `RedisBreakers`
 * (./breaker-redis.ts) shares them between instances through Redis (REDIS_URL). The engine awaits every call;
 * `state` and `snapshot` answer synchronously from what this process last saw (status pages, routing hints).
 */
export interface CircuitBreakers {
  allow(gateway: string, model: string): boolean | Promise<boolean>;
  success(gateway: string, model: string): void | Promise<void>;
  failure(gateway: string, model: string): void | Promise<void>;
  state(gateway: string, model: string): BreakerState;
  snapshot(): BreakerView[];
  /** ms until an open breaker lets a trial call through (0 when it is not open). */
  retryInMs(gateway: string, model: string): number;
  start?(): void;
  stop?(): Promise<void>;
}

interface Entry {
  failures: number;
  openedAt: number;
  state: BreakerState;
  trialInFlight: boolean;
}

export class Breakers implements CircuitBreakers {
  private entries = new Map<string, Entry>();

  constructor(
    private readonly failureThreshold = 5,
    private readonly cooldownMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  private key(gateway: string, model: string) {
    return `${gateway}\u0000${model}`;
  }

  // Only failing pairs have an entry (a success deletes it): while none fails, the checks every request makes (allow,
  // success) build no key string (a fresh one, hashed by the lookup: docs/PERFORMANCE.md, session 31).

  state(gateway: string, model: string): BreakerState {
    if (this.entries.size === 0) return 'closed';
    const e = this.entries.get(this.key(gateway, model));
    if (!e) return 'closed';
    if (e.state === 'open' && this.now() - e.openedAt >= this.cooldownMs) return 'half_open';
    return e.state;
  }

  /** May a call go to this (gateway, model) now? Claims the half-open trial when it is one. */
  allow(gateway: string, model: string): boolean {
    if (this.entries.size === 0) return true;
    const e = this.entries.get(this.key(gateway, model));
    if (!e || e.state === 'closed') return true;
    if (this.state(gateway, model) === 'half_open' && !e.trialInFlight) {
      e.state = 'half_open';
      e.trialInFlight = true;
      return true;
    }
    return false;
  }

  success(gateway: string, model: string): void {
    if (this.entries.size !== 0) this.entries.delete(this.key(gateway, model));
  }

  failure(gateway: string, model: string): void {
    const k = this.key(gateway, model);
    const e = this.entries.get(k) ?? { failures: 0, openedAt: 0, state: 'closed' as BreakerState, trialInFlight: false };
    e.failures++;
    e.trialInFlight = false;
    if (e.state === 'half_open' || e.failures >= this.failureThreshold) {
      e.state = 'open';
      e.openedAt = this.now();
    }
    this.entries.set(k, e);
  }

  retryInMs(gateway: string, model: string): number {
    const e = this.entries.get(this.key(gateway, model));
    if (!e || e.state !== 'open') return 0;
    return Math.max(0, e.openedAt + this.cooldownMs - this.now());
  }

  /** Every breaker that is not closed, for status pages and metrics. */
  snapshot(): BreakerView[] {
    return [...this.entries.entries()].map(([k, e]) => {
      const [gateway, model] = k.split('\u0000');
      return { gateway, model, state: this.state(gateway, model), failures: e.failures };
    }).filter((x) => x.state !== 'closed' || x.failures > 0);
  }
}

/** A gateway's worst breaker over its models: open when any is open, else half-open, else closed. */
export function gatewayState(breakers: Pick<CircuitBreakers, 'snapshot'>, gateway: string): BreakerState {
  let worst: BreakerState = 'closed';
  for (const b of breakers.snapshot()) {
    if (b.gateway !== gateway) continue;
    if (b.state === 'open') return 'open';
    if (b.state === 'half_open') worst = 'half_open';
  }
  return worst;
}
