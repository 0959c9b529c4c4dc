/**
 * Usage and health records, written off the request path: callers push into an in-memory buffer that is
 * flushed in one batch `intervalMs` after the first record waiting in it (or sooner when `maxBatch` is reached) and
 * on stop. The timer is armed only while records wait: an idle gateway is not woken four times a second for
 * nothing (docs/PERFORMANCE.md, session 12). A failed flush keeps its records for the next attempt, so none are
 * lost while the process lives.
 */
import type { Store } from '../store/index.js';
import type { UsageRecord } from '../store/usage.js';
import type { HealthObservation } from '../store/health.js';
import type { Logger } from '../logger.js';

export class Recorder {
  private usage: UsageRecord[] = [];
  private health: HealthObservation[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private listeners: Array<(u: UsageRecord[], h: HealthObservation[]) => void> = [];
  private started = false;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    /** The configuration's RECORDS_FLUSH_MS (src/config.ts holds the default). */
    private readonly intervalMs: number,
    private readonly maxBatch = 1000,
  ) {}

  start(): void {
    this.started = true;
    if (this.pending) this.arm();
  }

  /** The flush of what waits, `intervalMs` from now, unless one is armed already. */
  private arm(): void {
    if (!this.started || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Observers (metrics, live health snapshots) see every batch as it is flushed. */
  onFlush(fn: (u: UsageRecord[], h: HealthObservation[]) => void): void {
    this.listeners.push(fn);
  }

  recordUsage(rec: UsageRecord): void {
    this.usage.push(rec);
    if (this.usage.length >= this.maxBatch) void this.flush();
    else this.arm();
  }

  recordHealth(obs: HealthObservation): void {
    this.health.push(obs);
    if (this.health.length >= this.maxBatch) void this.flush();
    else this.arm();
  }

  get pending(): number {
    return this.usage.length + this.health.length;
  }

  /** Writes everything buffered; concurrent calls share one flush. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (!this.usage.length && !this.health.length) return;
    const usage = this.usage.splice(0);
    const health = this.health.splice(0);
    this.flushing = (async () => {
      // Listeners see only what was written: a batch that failed is retried and would be seen twice.
      let wroteUsage: UsageRecord[] = usage;
      let wroteHealth: HealthObservation[] = health;
      try {
        if (usage.length) await this.store.usage.insertMany(usage);
      } catch (err) {
        this.usage.unshift(...usage);
        wroteUsage = [];
        this.logger.error({ err, records: usage.length }, 'usage flush failed; will retry');
      }
      try {
        if (health.length) await this.store.health.record(health);
      } catch (err) {
        this.health.unshift(...health);
        wroteHealth = [];
        this.logger.error({ err, records: health.length }, 'health flush failed; will retry');
      }
      for (const fn of this.listeners) {
        try { fn(wroteUsage, wroteHealth); } catch (err) { this.logger.warn({ err }, 'recorder listener failed'); }
      }
    })();
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
      // a failed flush put its records back: they wait for the next one
      if (this.pending) this.arm();
    }
  }

  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
