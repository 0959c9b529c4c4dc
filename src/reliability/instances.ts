/**
 * Crash recovery of credit holds. Every process registers itself (gateway_instances: id, hostname, pid, start
 * time, heartbeat) and stamps its holds with its id. On start-up, and then on every heartbeat, it releases:
 *
 *   1. expired holds (expires_at in the past: no request lives that long), of any instance;
 *   2. open holds of every DEAD instance, whatever their age. An instance is dead when its row is gone or
 *      marks a clean stop, when its heartbeat is older than 3 heartbeat intervals, or — at once, without
 *      waiting for the heartbeat to age — when it ran on this host and its pid no longer exists.
 *
 * So after `kill -9` and a restart on the same host no hold stays held past start-up; with several hosts the
 * survivors release a dead instance's holds within 3 heartbeats. Releasing is idempotent (a hold is settled
 * once), so any number of instances may reconcile at the same time. A clean stop releases this process's own
 * remaining holds after its requests drained.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import type { Store } from '../store/index.js';
import type { InstanceRow } from '../store/instances.js';
import type { Logger } from '../logger.js';

const KEEP_DEAD_ROWS_MS = 7 * 24 * 3600_000;

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

export class InstanceTracker {
  readonly id = crypto.randomUUID();
  readonly hostname = os.hostname();
  startedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<unknown> | undefined;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly heartbeatMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Registers this process, binds its holds to it, and reconciles before the first request is served. */
  async start(): Promise<void> {
    this.startedAt = this.now();
    await this.store.instances.register({ id: this.id, hostname: this.hostname, pid: process.pid, started_at: this.startedAt, heartbeat_at: this.startedAt });
    this.store.credits.bindInstance(this.id);
    await this.reconcile();
    this.timer = setInterval(() => {
      this.beating ??= this.beat().finally(() => { this.beating = undefined; });
    }, this.heartbeatMs);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    try {
      await this.store.instances.heartbeat(this.id, this.now());
      await this.reconcile();
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'instance heartbeat failed');
    }
  }

  isDead(row: InstanceRow | undefined, at = this.now()): boolean {
    if (!row) return true;
    if (row.id === this.id) return false;
    if (row.stopped_at !== null) return true;
    if (row.heartbeat_at < at - 3 * this.heartbeatMs) return true;
    return row.hostname === this.hostname && !pidAlive(row.pid);
  }

  /** Releases expired holds and the holds of dead instances; returns how many of each. */
  async reconcile(): Promise<{ expired: number; orphaned: number }> {
    const at = this.now();
    const expired = await this.store.credits.releaseExpired(at);
    const holders = await this.store.credits.holdingInstances(this.id);
    const rows = new Map((await this.store.instances.get(holders)).map((r) => [r.id, r]));
    let orphaned = 0;
    for (const id of holders) if (this.isDead(rows.get(id), at)) orphaned += await this.store.credits.releaseInstance(id);
    await this.store.instances.prune(at - KEEP_DEAD_ROWS_MS);
    if (expired || orphaned) this.logger.info({ expired, orphaned, instance: this.id }, 'released credit holds of dead requests');
    return { expired, orphaned };
  }

  /** After the drain: gives back what this process still holds and marks it stopped. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.beating;
    if (!this.startedAt) return;
    const released = await this.store.credits.releaseInstance(this.id);
    if (released) this.logger.warn({ released }, 'released credit holds left at shutdown');
    await this.store.instances.markStopped(this.id, this.now());
  }
}
