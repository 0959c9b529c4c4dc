/**
 * The services handlers call. Each later piece of the gateway (engine, catalog, statistics, health, tools,
 * facades) adds its service here and builds it in buildServices(); handlers never reach the store or the
 * network except through these.
 */
import type { Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';
import { Recorder } from './engine/recorder.js';
import { ToolService, buildToolRegistry } from './tools/service.js';
import { TavilyClient } from './tools/web-search.js';
import { SearchService } from './tools/augment.js';
import { HubFacade } from './facades/hub.js';
import { PartnerFacade } from './facades/partner.js';

export interface Services {
  startedAt: Date;
  /** Batched usage and health writes (flushed on stop). */
  recorder: Recorder;
  /** Built-in tools: listing, validation, billed execution. */
  tools: ToolService;
  /** Web-search augmentation; `search.buildAugmentContext(query, opts)` serves the engine's `auto_web_search`. */
  search: SearchService;
  /** Model-hub and partner catalog facades (cached upstream clients). */
  hub: HubFacade;
  partner: PartnerFacade;
}

export async function buildServices(config: Config, store: Store, logger: Logger): Promise<Services> {
  const recorder = new Recorder(store, logger);
  recorder.start();
  const tavily = new TavilyClient(config.tools, config.upstreamConnectTimeoutMs);
  const tools = new ToolService(buildToolRegistry(config, tavily), store, recorder, logger);
  const search = new SearchService(tavily, config.tools, logger);
  const hub = new HubFacade(config.hub, config.upstreamConnectTimeoutMs, logger);
  const partner = new PartnerFacade(config.partner, config.upstreamConnectTimeoutMs, logger);
  return { startedAt: new Date(), recorder, tools, search, hub, partner };
}

/** Stops background work and flushes buffers (called on shutdown before the store closes). */
export async function stopServices(services: Services): Promise<void> {
  await services.recorder.stop();
}
