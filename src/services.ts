/**
 * The services handlers call. Each later piece of the gateway (engine, catalog, statistics, health, tools,
 * facades) adds its service here and builds it in buildServices(); handlers never reach the store or the
 * network except through these.
 */
import type { Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';
import { Recorder } from './engine/recorder.js';
import { Catalog } from './catalog/catalog.js';
import { loadSeeds } from './catalog/seeds.js';

export interface Services {
  startedAt: Date;
  /** Batched usage and health writes (flushed on stop). */
  recorder: Recorder;
  /** The model catalog (seeds + discovery + health); also the engine's CatalogReader. */
  catalog: Catalog;
}

export async function buildServices(config: Config, store: Store, logger: Logger): Promise<Services> {
  const recorder = new Recorder(store, logger);
  recorder.start();
  const catalog = new Catalog({ config, logger, store, seeds: loadSeeds(config.catalogSeedsDir) });
  await catalog.start();
  return { startedAt: new Date(), recorder, catalog };
}

/** Stops background work and flushes buffers (called on shutdown before the store closes). */
export async function stopServices(services: Services): Promise<void> {
  await services.catalog.stop();
  await services.recorder.stop();
}
