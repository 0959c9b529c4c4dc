/**
 * Circuit breakers shared by every gateway instance through Redis (REDIS_URL): one hash `<prefix>br`, one field
 * per (gateway, model) holding `failures,state,openedAt,trialUntil`. Each transition is one Lua script, so
 * instances agree: five failures seen by two instances open the breaker for both, and only one instance gets
 * the half-open trial. A trial claim lapses after the cooldown, so a trial holder that died cannot keep the
 * breaker half-open forever. The same rules as the in-process `Breakers`.
 *
 * If Redis fails, this process falls back to its own in-process breakers until Redis answers again.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.js';
import { throttledWarn } from '../reliability/redis.js';
import { Breakers, type BreakerState, type BreakerView, type CircuitBreakers } from './breaker.js';

const PARSE = `
local function parse(v)
  if not v then return 0, 'closed', 0, 0 end
  local f, s, o, t = string.match(v, '^(%d+),(%a+_?%a*),(%d+),(%d+)$')
  return tonumber(f), s, tonumber(o), tonumber(t)
end
`;

// ARGV: field, now, cooldown -> {allowed, state, failures, openedAt, trialUntil}
const ALLOW_LUA = `${PARSE}
local v = redis.call('HGET', KEYS[1], ARGV[1])
local f, s, o, t = parse(v)
local now = tonumber(ARGV[2]); local cooldown = tonumber(ARGV[3])
if s == 'closed' then return {1, s, f, o, t} end
if s == 'open' and now - o < cooldown then return {0, s, f, o, t} end
if t > now then return {0, 'half_open', f, o, t} end
t = now + cooldown
redis.call('HSET', KEYS[1], ARGV[1], f .. ',half_open,' .. o .. ',' .. t)
return {1, 'half_open', f, o, t}
`;

// ARGV: field, now, threshold -> {state, failures, openedAt, trialUntil}
const FAILURE_LUA = `${PARSE}
local v = redis.call('HGET', KEYS[1], ARGV[1])
local f, s, o, t = parse(v)
local now = tonumber(ARGV[2])
f = f + 1
if s == 'half_open' or f >= tonumber(ARGV[3]) then s = 'open'; o = now end
redis.call('HSET', KEYS[1], ARGV[1], f .. ',' .. s .. ',' .. o .. ',0')
return {s, f, o, 0}
`;

interface Entry { failures: number; state: BreakerState; openedAt: number; trialUntil: number }

type Commands = {
  gwBreakerAllow(key: string, field: string, now: number, cooldown: number): Promise<[number, string, number, number, number]>;
  gwBreakerFailure(key: string, field: string, now: number, threshold: number): Promise<[string, number, number, number]>;
};

const SEP = '\u0000';
const REFRESH_MS = 2_000;

export class RedisBreakers implements CircuitBreakers {
  private readonly r: Redis & Commands;
  private readonly key: string;
  /** What this process last saw, for the synchronous `state` and `snapshot`. */
  private mirror = new Map<string, Entry>();
  private readonly local: Breakers;
  private readonly warn: (err: unknown) => void;
  private timer: NodeJS.Timeout | undefined;

  constructor(redis: Redis, prefix: string, logger: Logger, private readonly failureThreshold = 5, private readonly cooldownMs = 30_000,
    private readonly now: () => number = Date.now) {
    redis.defineCommand('gwBreakerAllow', { numberOfKeys: 1, lua: ALLOW_LUA });
    redis.defineCommand('gwBreakerFailure', { numberOfKeys: 1, lua: FAILURE_LUA });
    this.r = redis as Redis & Commands;
    this.key = `${prefix}br`;
    this.local = new Breakers(failureThreshold, cooldownMs, now);
    this.warn = throttledWarn(logger, 'circuit breakers');
  }

  start(): void {
    this.timer ??= setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  async allow(gateway: string, model: string): Promise<boolean> {
    const field = gateway + SEP + model;
    try {
      const [ok, state, failures, openedAt, trialUntil] = await this.r.gwBreakerAllow(this.key, field, this.now(), this.cooldownMs);
      this.see(field, { state: state as BreakerState, failures: Number(failures), openedAt: Number(openedAt), trialUntil: Number(trialUntil) });
      return ok === 1;
    } catch (err) {
      this.warn(err);
      return this.local.allow(gateway, model);
    }
  }

  async success(gateway: string, model: string): Promise<void> {
    const field = gateway + SEP + model;
    this.mirror.delete(field);
    this.local.success(gateway, model);
    await this.r.hdel(this.key, field).catch(this.warn);
  }

  async failure(gateway: string, model: string): Promise<void> {
    const field = gateway + SEP + model;
    try {
      const [state, failures, openedAt] = await this.r.gwBreakerFailure(this.key, field, this.now(), this.failureThreshold);
      this.see(field, { state: state as BreakerState, failures: Number(failures), openedAt: Number(openedAt), trialUntil: 0 });
    } catch (err) {
      this.warn(err);
      this.local.failure(gateway, model);
    }
  }

  state(gateway: string, model: string): BreakerState {
    const e = this.mirror.get(gateway + SEP + model);
    if (!e) return this.local.state(gateway, model);
    if (e.state === 'open' && this.now() - e.openedAt >= this.cooldownMs) return 'half_open';
    return e.state;
  }

  retryInMs(gateway: string, model: string): number {
    const e = this.mirror.get(gateway + SEP + model);
    if (!e) return this.local.retryInMs(gateway, model);
    if (e.state === 'open') return Math.max(0, e.openedAt + this.cooldownMs - this.now());
    return e.state === 'half_open' ? Math.max(0, e.trialUntil - this.now()) : 0;
  }

  snapshot(): BreakerView[] {
    return [...this.mirror.entries()].map(([k, e]) => {
      const [gateway, model] = k.split(SEP);
      return { gateway, model, state: this.state(gateway, model), failures: e.failures };
    }).filter((x) => x.state !== 'closed' || x.failures > 0);
  }

  /** Reloads the mirror from Redis (other instances' transitions). */
  async refresh(): Promise<void> {
    try {
      const all = await this.r.hgetall(this.key);
      const next = new Map<string, Entry>();
      for (const [field, v] of Object.entries(all)) {
        const [f, s, o, t] = v.split(',');
        next.set(field, { failures: Number(f), state: s as BreakerState, openedAt: Number(o), trialUntil: Number(t) });
      }
      this.mirror = next;
    } catch (err) {
      this.warn(err);
    }
  }

  private see(field: string, e: Entry) {
    if (e.state === 'closed' && e.failures === 0) this.mirror.delete(field);
    else this.mirror.set(field, e);
  }
}
