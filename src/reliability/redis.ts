/**
 * The one Redis connection of a process (REDIS_URL), for state that instances share: rate-limit windows,
 * concurrency leases and circuit breakers. Commands time out fast and are not queued while disconnected, so a
 * Redis outage degrades to "fail open" in the callers instead of stalling requests.
 */
import { Redis } from 'ioredis';
import type { Logger } from '../logger.js';

export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
    enableOfflineQueue: false,
    connectTimeout: 5_000,
    // keep trying to reconnect in the background; callers fail open meanwhile
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
  let lastLog = 0;
  redis.on('error', (err) => {
    if (Date.now() - lastLog < 10_000) return;
    lastLog = Date.now();
    logger.warn({ err: err.message }, 'redis error');
  });
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    throw new Error(`REDIS_URL: cannot connect to Redis (${(err as Error).message})`);
  }
  return redis;
}

/** Logs a failed shared-state call at most every 10 s per topic, so an outage does not flood the log. */
export function throttledWarn(logger: Logger, topic: string): (err: unknown) => void {
  let last = 0;
  return (err) => {
    if (Date.now() - last < 10_000) return;
    last = Date.now();
    logger.warn({ err: (err as Error)?.message ?? String(err), topic }, 'shared state unavailable; failing open');
  };
}
