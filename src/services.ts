/**
 * The services handlers call. Each later piece of the gateway (engine, catalog, statistics, health, tools,
 * facades) adds its service here and builds it in buildServices(); handlers never reach the store or the
 * network except through these.
 */
import { anyGatewayKey, type Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';
import { Recorder } from './engine/recorder.js';
import { Metrics } from './metrics.js';
import { UsageStats, type GatewayDirectory } from './stats/service.js';
import { HealthService } from './health/service.js';
import { HealthMonitor, type ProbeFn, type ProbeTarget } from './health/monitor.js';
import { StatusService } from './health/status.js';

export interface Services {
  startedAt: Date;
  /** Batched usage and health writes (flushed on stop). */
  recorder: Recorder;
  /** Prometheus metrics; the engine reports upstream attempts and breaker states here. */
  metrics: Metrics;
  /** Usage statistics. */
  stats: UsageStats;
  /** Model health records, providers, incidents. */
  health: HealthService;
  /** Active probes of model health. */
  monitor: HealthMonitor;
  /** Public status page and instance diagnostics. */
  status: StatusService;
}

/** What other parts plug into statistics and health (the integrator wires the catalog and the engine here). */
export interface ServiceWiring {
  /** The catalog's gateways (a CatalogReader fits): aliases, 404 for unknown gateways, zero rows in summaries. */
  directory?: GatewayDirectory;
  /** The engine's tiny probe request, for the active health monitor. */
  probe?: ProbeFn;
  /** Models to probe: those of the gateways that have keys. */
  probeTargets?: () => ProbeTarget[] | Promise<ProbeTarget[]>;
  /** Time source of statistics, health and the monitor (tests pin it). */
  clock?: () => number;
}

export async function buildServices(config: Config, store: Store, logger: Logger, wiring: ServiceWiring = {}): Promise<Services> {
  const startedAt = new Date();
  const clock = wiring.clock ?? Date.now;
  const recorder = new Recorder(store, logger);
  recorder.start();
  const directory = wiring.directory ?? null;
  const probe: ProbeFn = wiring.probe ?? (async () => { throw new Error('no probe function is wired'); });
  let monitor: HealthMonitor | undefined;
  const monitoringActive = () => monitor?.active ?? false;
  const metrics = new Metrics({ pendingRecords: () => recorder.pending, monitoringActive });
  recorder.onFlush((usage) => metrics.usage(usage));
  const stats = new UsageStats(store.db, directory, clock);
  const health = new HealthService(store.db, monitoringActive, clock);
  health.start(recorder);
  monitor = new HealthMonitor({
    config: config.health, enabled: config.health.mode === 'on' || (config.health.mode === 'auto' && anyGatewayKey(config)),
    probe, targets: wiring.probeTargets ?? (() => []), records: async () => (await health.records()).rows,
    recorder, metrics, logger, clock,
  });
  monitor.start();
  const status = new StatusService({ health, stats, directory, config, store, recorder, metrics, monitoringActive, startedAt });
  return { startedAt, recorder, metrics, stats, health, monitor, status };
}

/** Stops background work and flushes buffers (called on shutdown before the store closes). */
export async function stopServices(services: Services): Promise<void> {
  await services.monitor.stop();
  await services.recorder.stop();
  await services.health.stop();
}
