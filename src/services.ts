/**
 * The services handlers call. Each later piece of the gateway (engine, catalog, statistics, health, tools,
 * facades) adds its service here and builds it in buildServices(); handlers never reach the store or the
 * network except through these.
 */
import type { Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';
import { Recorder } from './engine/recorder.js';
import { Breakers } from './engine/breaker.js';
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

export interface Services {
  startedAt: Date;
  /** Batched usage and health writes (flushed on stop). */
  recorder: Recorder;
  breakers: Breakers;
  /** The model catalog (seeds + discovery + health): every catalog query, and the engine's resolver. */
  catalog: Catalog;
  /**
   * What the engine resolves models with: the catalog, unless a test supplies a fixture (test/support/catalog.ts).
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
}

/** `overrides` lets tests supply parts (e.g. `models`, a resolver built from fixtures). */
export async function buildServices(config: Config, store: Store, logger: Logger, overrides: Partial<Services> = {}): Promise<Services> {
  const recorder = overrides.recorder ?? new Recorder(store, logger);
  recorder.start();
  const breakers = overrides.breakers ?? new Breakers();
  const catalog = new Catalog({ config, logger, store, seeds: loadSeeds(config.catalogSeedsDir) });
  catalog.setBreakerState((gateway) => breakers.gatewayState(gateway));
  await catalog.start();
  const models = overrides.models ?? catalog;
  const engine = new ChatEngine({ config, store, logger, recorder, breakers, catalog: models, providers });
  const tavily = new TavilyClient(config.tools, config.upstreamConnectTimeoutMs);
  const tools = new ToolService(buildToolRegistry(config, tavily), store, recorder, logger);
  const search = new SearchService(tavily, config.tools, logger);
  const hub = new HubFacade(config.hub, config.upstreamConnectTimeoutMs, logger);
  const partner = new PartnerFacade(config.partner, config.upstreamConnectTimeoutMs, logger);
  const media = new MediaService({ config, store, logger, recorder, engine, catalog: models });
  return { startedAt: new Date(), recorder, breakers, catalog, models, engine, tools, search, hub, partner, media };
}

/** Stops background work and flushes buffers (called on shutdown before the store closes). */
export async function stopServices(services: Services): Promise<void> {
  await services.catalog.stop();
  await services.recorder.stop();
  await closeAgents();
}
