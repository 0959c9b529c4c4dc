/**
 * The reliability parts of the services, built in one place so src/services.ts only wires them in: the Redis
 * connection (REDIS_URL), circuit breakers and rate limits (in this process, or shared through Redis), the
 * instance tracker that reconciles credit holds of dead processes, and the in-flight counter for draining.
 */
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { Store } from '../store/index.js';
import type { Logger } from '../logger.js';
import type { Recorder } from '../engine/recorder.js';
import { Breakers, type CircuitBreakers } from '../engine/breaker.js';
import { RedisBreakers } from '../engine/breaker-redis.js';
import { RateLimiter } from '../limits/limiter.js';
import { MemoryLimitBackend } from '../limits/backend.js';
import { RedisLimitBackend } from '../limits/redis-backend.js';
import { SharedCallWindow } from '../limits/shared-window.js';
import type { CallWindow } from '../tools/augment.js';
import { connectRedis, throttledWarn } from './redis.js';
import { InstanceTracker } from './instances.js';
import { InFlight } from './drain.js';

export interface ReliabilityServices {
  breakers: CircuitBreakers;
  limits: RateLimiter;
  instance: InstanceTracker;
  inflight: InFlight;
  redis?: Redis;
}

/**
 * Builds and starts them. Reconciles credit holds before returning, so a restarted process has released a dead
 * one's holds before it serves. `augmentWindows` is set when search-augment limits must be shared (Redis).
 */
export async function buildReliability(config: Config, store: Store, logger: Logger, recorder: Recorder, overrides: Partial<ReliabilityServices> = {}):
  Promise<{ services: ReliabilityServices; augmentWindows?: { guests: CallWindow; keys: CallWindow } }> {
  const rel = config.reliability;
  const redis = overrides.redis ?? (config.redisUrl ? await connectRedis(config.redisUrl, logger) : undefined);
  const breakers: CircuitBreakers = overrides.breakers ?? (redis
    ? new RedisBreakers(redis, rel.redisPrefix, logger, rel.breakerFailureThreshold, rel.breakerCooldownMs)
    : new Breakers(rel.breakerFailureThreshold, rel.breakerCooldownMs));
  breakers.start?.();
  const shared = redis ? new RedisLimitBackend(redis, rel.redisPrefix) : undefined;
  const limits = overrides.limits ?? new RateLimiter(shared ?? new MemoryLimitBackend(), rel.limits, store.limits, store.keys, logger);
  limits.start();
  recorder.onFlush((usage) => limits.countUsage(usage));
  const instance = overrides.instance ?? new InstanceTracker(store, logger, rel.instanceHeartbeatMs);
  await instance.start();
  const warn = throttledWarn(logger, 'search-augment limits');
  const augmentWindows = shared && {
    guests: new SharedCallWindow(shared, 'augment:guest', config.tools.guestAugmentPerMinute, warn),
    keys: new SharedCallWindow(shared, 'augment:key', config.tools.keyAugmentPerMinute, warn),
  };
  return { services: { breakers, limits, instance, inflight: overrides.inflight ?? new InFlight(), redis }, augmentWindows };
}

/** After the recorder's last flush: gives back this process's holds, stops timers, closes Redis. */
export async function stopReliability(s: ReliabilityServices): Promise<void> {
  await s.instance.stop();
  await s.limits.stop();
  await s.breakers.stop?.();
  await s.redis?.quit().catch(() => s.redis?.disconnect());
}
