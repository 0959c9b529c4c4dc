/**
 * The active health monitor: probes models with a tiny request so their health is known without traffic.
 *
 * - Schedule by tier: a target is due when it had no call — passive or probe — for its tier's interval (hot
 *   models are checked most often, cold ones rarely); a failing one (unhealthy or degraded, or last call
 *   failed) is rechecked after the short `failing` interval. Real traffic counts as a check, so a busy model is
 *   probed only when its traffic pauses. Never-seen targets are due at once (cold, unknown).
 * - A global budget: a token bucket of `budgetPerMinute` probes, refilled continuously; due targets beyond it
 *   wait, failing ones first, then hot, warm, cold, most overdue first.
 * - Results go through the recorder as health observations with source `probe`: they land in model_health and
 *   its history, never in usage_records, so statistics never count them.
 * The engine's probe function and the target list (gateways with keys, their models) are injected.
 */
import type { Recorder } from '../engine/recorder.js';
import type { Logger } from '../logger.js';
import type { HealthMonitorConfig } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { RecordRow, Tier } from './records.js';

export interface ProbeResult {
  ok: boolean;
  /** success | error | timeout | rate_limited */
  status: string;
  latencyMs: number;
  error: string | null;
}
export type ProbeFn = (gateway: string, model: string) => Promise<ProbeResult>;

export interface ProbeTarget {
  gateway: string;
  model: string;
  provider: string;
}

export interface PlannedProbe extends ProbeTarget {
  tier: Tier;
  failing: boolean;
  /** When it became due (epoch ms). */
  due: number;
}

export interface MonitorDeps {
  config: HealthMonitorConfig;
  /** Whether the monitor may run at all (HEALTH_MONITOR and, for `auto`, a configured gateway key). */
  enabled: boolean;
  probe: ProbeFn;
  targets: () => ProbeTarget[] | Promise<ProbeTarget[]>;
  /** Current health records (tier, status, last call) of the tracked models. */
  records: () => Promise<RecordRow[]>;
  recorder: Recorder;
  metrics?: Metrics;
  logger: Logger;
  clock?: () => number;
}

const key = (t: { gateway: string; model: string }) => `${t.gateway}\u0000${t.model}`;
const TIER_RANK: Record<Tier, number> = { hot: 0, warm: 1, cold: 2 };

export class HealthMonitor {
  private timer: NodeJS.Timeout | undefined;
  private tokens: number;
  private refilledAt: number;
  private ticking: Promise<number> | undefined;
  private readonly inFlight = new Set<string>();
  /** Probes made but maybe not flushed yet: keeps the next tick from probing them again. */
  private readonly probedAt = new Map<string, number>();
  private readonly clock: () => number;

  constructor(private readonly deps: MonitorDeps) {
    this.clock = deps.clock ?? Date.now;
    this.tokens = deps.config.budgetPerMinute;
    this.refilledAt = this.clock();
  }

  /** True while the monitor runs. */
  get active(): boolean {
    return this.timer !== undefined;
  }

  /** Starts the schedule when enabled; returns whether it runs. */
  start(): boolean {
    if (!this.deps.enabled || this.timer) return this.active;
    this.timer = setInterval(() => void this.tick().catch((err) => this.deps.logger.warn({ err }, 'health monitor tick failed')),
      this.deps.config.tickMs);
    this.timer.unref();
    return true;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking?.catch(() => {});
  }

  /** Probes available now under the budget (whole tokens). */
  budget(now = this.clock()): number {
    const perMs = this.deps.config.budgetPerMinute / 60_000;
    this.tokens = Math.min(this.deps.config.budgetPerMinute, this.tokens + Math.max(0, now - this.refilledAt) * perMs);
    this.refilledAt = Math.max(now, this.refilledAt);
    return Math.floor(this.tokens);
  }

  /** Due targets in probe order (failing, then hot, warm, cold; most overdue first). */
  async plan(now = this.clock()): Promise<PlannedProbe[]> {
    const targets = await this.deps.targets();
    if (!targets.length) return [];
    const records = await this.deps.records();
    const byKey = new Map(records.map((r) => [key(r), r]));
    const iv = this.deps.config.intervalsMs;
    const due: PlannedProbe[] = [];
    for (const t of targets) {
      const k = key(t);
      if (this.inFlight.has(k)) continue;
      const r = byKey.get(k);
      const tier: Tier = r?.tier ?? 'cold';
      const failing = !!r && (r.status === 'unhealthy' || r.status === 'degraded' || (r.last_status !== null && r.last_status !== 'success'));
      const last = Math.max(r?.last_checked ?? -Infinity, this.probedAt.get(k) ?? -Infinity);
      const at = last === -Infinity ? 0 : last + (failing ? Math.min(iv.failing, iv[tier]) : iv[tier]);
      if (at <= now) due.push({ ...t, tier, failing, due: at });
    }
    return due.sort((a, b) => Number(b.failing) - Number(a.failing) || TIER_RANK[a.tier] - TIER_RANK[b.tier] || a.due - b.due
      || (key(a) < key(b) ? -1 : 1));
  }

  /** One scheduling round: probes due targets within the budget and concurrency; resolves when they finished. */
  tick(now = this.clock()): Promise<number> {
    this.ticking ??= this.runTick(now).finally(() => { this.ticking = undefined; });
    return this.ticking;
  }

  private async runTick(now: number): Promise<number> {
    const plan = await this.plan(now);
    const slots = Math.min(this.budget(now), Math.max(0, this.deps.config.concurrency - this.inFlight.size), plan.length);
    const chosen = plan.slice(0, slots);
    this.tokens -= chosen.length;
    await Promise.all(chosen.map((t) => this.probeOne(t)));
    return chosen.length;
  }

  private async probeOne(t: ProbeTarget): Promise<void> {
    const k = key(t);
    this.inFlight.add(k);
    try {
      const r = await this.deps.probe(t.gateway, t.model);
      const ts = this.clock();
      this.probedAt.set(k, ts);
      this.deps.recorder.recordHealth({
        gateway: t.gateway, model: t.model, provider: t.provider, ok: r.ok, status: r.status,
        latencyMs: r.latencyMs, error: r.ok ? null : r.error, ts, source: 'probe',
      });
      this.deps.metrics?.probe(t.gateway, r.ok);
    } catch (err) {
      // The probe could not be made (no key, a bug): that says nothing about the model, so nothing is recorded.
      this.probedAt.set(k, this.clock());
      this.deps.logger.warn({ err, gateway: t.gateway, model: t.model }, 'health probe could not run');
    } finally {
      this.inFlight.delete(k);
    }
    if (this.probedAt.size > 10_000) this.probedAt.clear();
  }
}
