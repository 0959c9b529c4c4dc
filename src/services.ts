/**
 * The services handlers call. Each later piece of the gateway (engine, catalog, statistics, health, tools,
 * facades) adds its service here and builds it in buildServices(); handlers never reach the store or the
 * network except through these.
 */
import { anyGatewayKey, type Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';
import { Recorder } from './engine/recorder.js';
import { gatewayState, type CircuitBreakers } from './engine/breaker.js';
import type { Redis } from 'ioredis';
import type { InstanceTracker } from './reliability/instances.js';
import type { InFlight } from './reliability/drain.js';
import type { RateLimiter } from './limits/limiter.js';
import { buildReliability, stopReliability, type ReliabilityServices } from './reliability/index.js';
import { loadCatalogFile } from './catalog/file.js';
import { ChatEngine, type Upstreams } from './engine/chat.js';
import { providers } from './providers/registry.js';
import { closeAgents } from './providers/http.js';
import type { CatalogReader } from './catalog/types.js';
import { ToolService, buildToolRegistry } from './tools/service.js';
import { TavilyClient } from './tools/web-search.js';
import { SearchService } from './tools/augment.js';
import { HubFacade } from './facades/hub.js';
import { PartnerFacade } from './facades/partner.js';
import { Catalog } from './catalog/catalog.js';
import { loadSeeds } from './catalog/seeds.js';
import { MediaService } from './media/index.js';
import { Metrics } from './metrics.js';
import { UsageStats, type GatewayDirectory } from './stats/service.js';
import { HealthService } from './health/service.js';
import { HealthMonitor, type ProbeFn, type ProbeTarget } from './health/monitor.js';
import { StatusService } from './health/status.js';

export interface Services {
  startedAt: Date;
  /** Batched usage and health writes (flushed on stop). */
  recorder: Recorder;
  /** In this process, or shared through Redis when REDIS_URL is set. */
  breakers: CircuitBreakers;
  /** Per-key rate limits (requests/min, tokens/min, concurrency), in memory or shared through Redis. */
  limits: RateLimiter;
  /** This process in gateway_instances: reconciles credit holds of dead processes (start-up and heartbeat). */
  instance: InstanceTracker;
  /** Requests in flight, for the graceful stop (SIGTERM drains them). */
  inflight: InFlight;
  /** The shared-state connection when REDIS_URL is set. */
  redis?: Redis;
  /** The model catalog (seeds + discovery + health): every catalog query, and the engine's resolver. */
  catalog: Catalog;
  /**
   * What the engine resolves models with: the catalog; a CATALOG_FILE (real-process tests, demos); or a fixture a
   * test supplies (test/support/catalog.ts).
   */
  models: CatalogReader & Upstreams;
  engine: ChatEngine;
  /** Built-in tools: listing, validation, billed execution. */
  tools: ToolService;
  /** Web-search augmentation; `search.buildAugmentContext(query, opts)` serves the engine's `auto_web_search`. */
  search: SearchService;
  /** Model-hub and partner catalog facades (cached upstream clients). */
  hub: HubFacade;
  partner: PartnerFacade;
  /** Image generation and audio transcription (src/media/), billed and routed like chat. */
  media: MediaService;
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

/** What tests may supply instead of the defaults. */
export interface ServiceOptions extends Partial<ReliabilityServices> {
  /** A model resolver built from fixtures (the engine uses it instead of the catalog). */
  models?: CatalogReader & Upstreams;
  recorder?: Recorder;
  /** Gateways known to statistics (default: the catalog's). */
  directory?: GatewayDirectory;
  /** The active monitor's probe (default: the engine's tiny request). */
  probe?: ProbeFn;
  /** Models to probe (default: active chat offers of configured gateways). */
  probeTargets?: () => ProbeTarget[] | Promise<ProbeTarget[]>;
  /** Time source of statistics, health and the monitor (tests pin it). */
  clock?: () => number;
}

export async function buildServices(config: Config, store: Store, logger: Logger, opts: ServiceOptions = {}): Promise<Services> {
  const startedAt = new Date();
  const clock = opts.clock ?? Date.now;
  const recorder = opts.recorder ?? new Recorder(store, logger, config.recordsFlushMs);
  recorder.start();
  // breakers, limits, instance (hold reconciliation), inflight, redis: src/reliability/index.ts
  const { services: reliability, augmentWindows } = await buildReliability(config, store, logger, recorder, opts);
  const { breakers } = reliability;
  const catalog = new Catalog({ config, logger, store, seeds: loadSeeds(config.catalogSeedsDir) });
  catalog.setBreakerState((gateway) => gatewayState(breakers, gateway));
  await catalog.start();
  const models = opts.models ?? (config.reliability.catalogFile ? loadCatalogFile(config.reliability.catalogFile, config) : catalog);
  let monitor: HealthMonitor | undefined;
  const monitoringActive = () => monitor?.active ?? false;
  const metrics = new Metrics({ pendingRecords: () => recorder.pending, monitoringActive, breakers });
  recorder.onFlush((usage) => metrics.usage(usage));
  const engine = new ChatEngine({ config, store, logger, recorder, breakers, catalog: models, providers, metrics });
  const tavily = new TavilyClient(config.tools, config.upstreamConnectTimeoutMs);
  const tools = new ToolService(buildToolRegistry(config, tavily), store, recorder, logger);
  const search = new SearchService(tavily, config.tools, logger, augmentWindows);
  const hub = new HubFacade(config.hub, config.upstreamConnectTimeoutMs, logger);
  const partner = new PartnerFacade(config.partner, config.upstreamConnectTimeoutMs, logger);
  const media = new MediaService({ config, store, logger, recorder, engine, catalog: models });

  const directory = opts.directory ?? catalog;
  const stats = new UsageStats(store.db, directory, clock);
  const health = new HealthService(store.db, monitoringActive, clock);
  health.start(recorder, undefined, config.healthHistoryDays);
  monitor = new HealthMonitor({
    config: config.health, enabled: config.health.mode === 'on' || (config.health.mode === 'auto' && anyGatewayKey(config)),
    probe: opts.probe ?? ((gateway, model) => engine.probe(gateway, model)),
    targets: opts.probeTargets ?? (() => catalog.probeTargets()),
    records: async () => (await health.records()).rows,
    recorder, metrics, logger, clock,
  });
  monitor.start();
  const status = new StatusService({ health, stats, directory, config, store, recorder, breakers, monitoringActive, startedAt });
  return { startedAt, recorder, ...reliability, catalog, models, engine, tools, search, hub, partner, media, metrics, stats, health, monitor, status };
}

/** Stops background work and flushes buffers (called on shutdown before the store closes). */
export async function stopServices(services: Services): Promise<void> {
  await services.monitor.stop();
  await services.catalog.stop();
  await services.recorder.stop();
  await services.health.stop();
  await stopReliability(services);
  await closeAgents();
}
