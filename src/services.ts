/**
 * The services handlers call. Each later piece of the gateway (engine, catalog, statistics, health, tools,
 * facades) adds its service here and builds it in buildServices(); handlers never reach the store or the
 * network except through these.
 */
import type { Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';

export interface Services {
  startedAt: Date;
}

export async function buildServices(_config: Config, _store: Store, _logger: Logger): Promise<Services> {
  return { startedAt: new Date() };
}

/** Stops background work and flushes buffers (called on shutdown before the store closes). */
export async function stopServices(_services: Services): Promise<void> {}
