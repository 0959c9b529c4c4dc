/**
 * Rate-limit state in Redis, shared by every gateway instance. Each operation is one Lua script, so the check
 * and the count happen atomically on the server: two instances taking the last slot at once cannot both get it.
 * Windows are hashes of one-second buckets (`<prefix>rl:<key>`), concurrency slots a sorted set of leases
 * scored by their expiry (`<prefix>cc:<key>`).
 */
import type { Redis } from 'ioredis';
import { LEASE_TTL_MS, WINDOW_SECONDS, resetMs, type LimitBackend, type WindowCount } from './backend.js';

// mode: take (count one if under the limit), add (count n unconditionally), read
const WINDOW_LUA = `
local key = KEYS[1]
local nowSec = tonumber(ARGV[1]); local win = tonumber(ARGV[2]); local limit = tonumber(ARGV[3])
local n = tonumber(ARGV[4]); local mode = ARGV[5]
local h = redis.call('HGETALL', key)
local count = 0; local oldest = -1
for i = 1, #h, 2 do
  local s = tonumber(h[i])
  if s <= nowSec - win then redis.call('HDEL', key, h[i])
  else
    count = count + tonumber(h[i + 1])
    if oldest < 0 or s < oldest then oldest = s end
  end
end
if mode == 'read' then return {1, count, oldest} end
if mode == 'take' and count >= limit then return {0, count, oldest} end
redis.call('HINCRBY', key, ARGV[1], n)
redis.call('EXPIRE', key, win + 5)
if oldest < 0 then oldest = nowSec end
return {1, count + n, oldest}
`;

const ACQUIRE_LUA = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`;

type Commands = {
  gwWindow(key: string, nowSec: number, win: number, limit: number, n: number, mode: string): Promise<[number, number, number]>;
  gwAcquire(key: string, nowMs: number, lease: string, limit: number, until: number, ttl: number): Promise<number>;
};

export class RedisLimitBackend implements LimitBackend {
  private readonly r: Redis & Commands;

  constructor(redis: Redis, private readonly prefix: string) {
    redis.defineCommand('gwWindow', { numberOfKeys: 1, lua: WINDOW_LUA });
    redis.defineCommand('gwAcquire', { numberOfKeys: 1, lua: ACQUIRE_LUA });
    this.r = redis as Redis & Commands;
  }

  private async window(key: string, limit: number, n: number, mode: 'take' | 'add' | 'read', nowMs: number): Promise<WindowCount> {
    const [ok, count, oldest] = await this.r.gwWindow(`${this.prefix}rl:${key}`, Math.floor(nowMs / 1000), WINDOW_SECONDS, limit, n, mode);
    return { allowed: ok === 1, count: Number(count), resetMs: resetMs(Number(oldest) < 0 ? null : Number(oldest), nowMs) };
  }

  take(key: string, limit: number, nowMs: number): Promise<WindowCount> {
    return this.window(key, limit, 1, 'take', nowMs);
  }

  async add(key: string, n: number, nowMs: number): Promise<void> {
    if (n > 0) await this.window(key, 0, n, 'add', nowMs);
  }

  read(key: string, nowMs: number): Promise<WindowCount> {
    return this.window(key, 0, 0, 'read', nowMs);
  }

  async acquire(key: string, lease: string, limit: number, nowMs: number): Promise<boolean> {
    return (await this.r.gwAcquire(`${this.prefix}cc:${key}`, nowMs, lease, limit, nowMs + LEASE_TTL_MS, LEASE_TTL_MS * 2)) === 1;
  }

  async release(key: string, lease: string): Promise<void> {
    await this.r.zrem(`${this.prefix}cc:${key}`, lease);
  }

  async renew(key: string, leases: string[], nowMs: number): Promise<void> {
    if (!leases.length) return;
    const k = `${this.prefix}cc:${key}`;
    const args = leases.flatMap((l) => [nowMs + LEASE_TTL_MS, l]);
    await this.r.zadd(k, 'XX', ...(args as [number, string]));
    await this.r.pexpire(k, LEASE_TTL_MS * 2);
  }

  async close(): Promise<void> {
    // the connection belongs to services (shared with the breakers); closed there
  }
}
