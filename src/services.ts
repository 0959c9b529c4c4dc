/**
 * The services handlers call. Each later piece of the gateway (engine, catalog, statistics, health, tools,
 * facades) adds its service here and builds it in buildServices(); handlers never reach the store or the
 * network except through these.
 */
import type { Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';
import { Recorder } from './engine/recorder.js';

export interface Services {
  startedAt: Date;
  /** Batched usage and health writes (flushed on stop). */
  recorder: Recorder;
}

export async function buildServices(_config: Config, store: Store, logger: Logger): Promise<Services> {
  const recorder = new Recorder(store, logger);
  recorder.start();
  return { startedAt: new Date(), recorder };
}

/** Stops background work and flushes buffers (called on shutdown before the store closes). */
export async function stopServices(services: Services): Promise<void> {
  await services.recorder.stop();
}
