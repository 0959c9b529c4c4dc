/**
 * The services handlers call. Each later piece of the gateway (engine, catalog, statistics, health, tools,
 * facades) adds its service here and builds it in buildServices(); handlers never reach the store or the
 * network except through these.
 */
import type { Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';
import { Recorder } from './engine/recorder.js';
import type { CircuitBreakers } from './engine/breaker.js';
import type { Redis } from 'ioredis';
import type { InstanceTracker } from './reliability/instances.js';
import type { InFlight } from './reliability/drain.js';
import type { RateLimiter } from './limits/limiter.js';
import { buildReliability, stopReliability } from './reliability/index.js';
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
  catalog: CatalogReader & Upstreams;
  engine: ChatEngine;
  /** Built-in tools: listing, validation, billed execution. */
  tools: ToolService;
  /** Web-search augmentation; `search.buildAugmentContext(query, opts)` serves the engine's `auto_web_search`. */
  search: SearchService;
  /** Model-hub and partner catalog facades (cached upstream clients). */
  hub: HubFacade;
  partner: PartnerFacade;
}

/** `overrides` lets tests supply parts (e.g. a catalog built from fixtures). */
export async function buildServices(config: Config, store: Store, logger: Logger, overrides: Partial<Services> = {}): Promise<Services> {
  const recorder = overrides.recorder ?? new Recorder(store, logger);
  recorder.start();
  // breakers, limits, instance (hold reconciliation), inflight, redis: src/reliability/index.ts
  const { services: reliability, augmentWindows } = await buildReliability(config, store, logger, recorder, overrides);
  const { breakers } = reliability;
  const catalog = overrides.catalog ?? (await defaultCatalog(config, store, logger));
  const engine = new ChatEngine({ config, store, logger, recorder, breakers, catalog, providers });
  const tavily = new TavilyClient(config.tools, config.upstreamConnectTimeoutMs);
  const tools = new ToolService(buildToolRegistry(config, tavily), store, recorder, logger);
  const search = new SearchService(tavily, config.tools, logger, augmentWindows);
  const hub = new HubFacade(config.hub, config.upstreamConnectTimeoutMs, logger);
  const partner = new PartnerFacade(config.partner, config.upstreamConnectTimeoutMs, logger);
  return { startedAt: new Date(), recorder, ...reliability, catalog, engine, tools, search, hub, partner };
}

async function defaultCatalog(config: Config, _store: Store, _logger: Logger): Promise<CatalogReader & Upstreams> {
  // CATALOG_FILE: a small JSON catalog instead of the default one (tests of the real process, demos).
  if (config.reliability.catalogFile) return loadCatalogFile(config.reliability.catalogFile, config);
  // Replaced by the seeded catalog (src/catalog/) when it lands; until then no model resolves.
  return { resolve: () => [], gateway: () => undefined, gateways: () => [], upstream: () => undefined };
}

/** Stops background work and flushes buffers (called on shutdown before the store closes). */
export async function stopServices(services: Services): Promise<void> {
  await services.recorder.stop();
  await stopReliability(services);
  await closeAgents();
}
