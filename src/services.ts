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

export async function buildServices(config: Config, store: Store, logger: Logger): Promise<Services> {
  const startedAt = new Date();
  const recorder = new Recorder(store, logger);
  recorder.start();
  // INTEGRATION: the catalog (a CatalogReader fits GatewayDirectory) — configured gateways, aliases, 404s.
  const directory: GatewayDirectory | null = null;
  // INTEGRATION: the engine's probe and the targets (models of the gateways that have keys).
  const probe: ProbeFn = async () => { throw new Error('no probe function is wired'); };
  const targets = (): ProbeTarget[] => [];
  let monitor: HealthMonitor | undefined;
  const monitoringActive = () => monitor?.active ?? false;
  const metrics = new Metrics({ pendingRecords: () => recorder.pending, monitoringActive });
  recorder.onFlush((usage) => metrics.usage(usage));
  const stats = new UsageStats(store.db, directory);
  const health = new HealthService(store.db, monitoringActive);
  health.start(recorder);
  monitor = new HealthMonitor({
    config: config.health, enabled: config.health.mode === 'on' || (config.health.mode === 'auto' && anyGatewayKey(config)),
    probe, targets, records: async () => (await health.records()).rows, recorder, metrics, logger,
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
