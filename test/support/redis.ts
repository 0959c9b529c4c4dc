/**
 * Redis for tests: 127.0.0.1:6379 (TEST_REDIS_URL). Required when CI is set; elsewhere, when it is unreachable,
 * the Redis variants are skipped with a visible notice. Every test run writes under its own key prefix, and the
 * root hook deletes what it wrote.
 */
import crypto from 'node:crypto';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

let state: Promise<boolean> | undefined;

export function redisAvailable(): Promise<boolean> {
  state ??= (async () => {
    const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
    r.on('error', () => undefined);
    try {
      await r.connect();
      await r.ping();
      return true;
    } catch (err) {
      if (process.env.CI) throw new Error(`Redis at ${REDIS_URL} is required when CI is set: ${(err as Error).message}`);
      console.warn(`\n  NOTICE: Redis at ${REDIS_URL} is unreachable; Redis variants of the tests are SKIPPED.\n`);
      return false;
    } finally {
      r.disconnect();
    }
  })();
  return state;
}

const prefixes: string[] = [];

/** A key prefix of its own (`gwtest:<random>:`), deleted after the run. */
export function testPrefix(): string {
  const p = `gwtest:${crypto.randomBytes(6).toString('hex')}:`;
  prefixes.push(p);
  return p;
}

/** A plain client for tests (closed by the caller). */
export function testRedis(): Redis {
  return new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
}

export async function dropTestPrefixes(): Promise<void> {
  if (!prefixes.length) return;
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    for (const p of prefixes.splice(0)) {
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', `${p}*`, 'COUNT', 500);
        cursor = next;
        if (keys.length) await r.del(...keys);
      } while (cursor !== '0');
    }
  } catch {
    /* best effort */
  } finally {
    r.disconnect();
  }
}
