/** Circuit breakers shared through Redis: the in-process rules, agreed on by two instances. */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { RedisBreakers } from '../../src/engine/breaker-redis.js';
import { createLogger } from '../../src/logger.js';
import { redisAvailable, testPrefix, REDIS_URL } from '../support/redis.js';

describe('RedisBreakers (two instances, one Redis)', () => {
  const conns: Redis[] = [];
  const clock = { t: 1_800_000_000_000 };
  let a: RedisBreakers;
  let b: RedisBreakers;
  before(async function () {
    if (!(await redisAvailable())) this.skip();
    const prefix = testPrefix();
    const make = () => {
      const r = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      conns.push(r);
      return new RedisBreakers(r, prefix, createLogger('silent'), 3, 1000, () => clock.t);
    };
    a = make();
    b = make();
  });
  after(async () => {
    for (const c of conns) await c.quit();
  });

  it('failures seen by both instances add up; the open breaker refuses on both; one instance gets the half-open trial', async () => {
    await a.failure('groq', 'm/x');
    await b.failure('groq', 'm/x');
    expect(await a.allow('groq', 'm/x')).to.equal(true);
    await a.failure('groq', 'm/x'); // third: opens
    expect(await b.allow('groq', 'm/x')).to.equal(false);
    expect(await a.allow('groq', 'm/x')).to.equal(false);
    expect(a.state('groq', 'm/x')).to.equal('open');
    expect(a.retryInMs('groq', 'm/x')).to.equal(1000);
    // other (gateway, model) pairs are unaffected
    expect(await b.allow('groq', 'm/y')).to.equal(true);
    clock.t += 1000;
    const trials = await Promise.all([a.allow('groq', 'm/x'), b.allow('groq', 'm/x'), a.allow('groq', 'm/x')]);
    expect(trials.filter(Boolean)).to.have.length(1);
    // the trial fails: open again, for another cooldown
    await b.failure('groq', 'm/x');
    expect(await a.allow('groq', 'm/x')).to.equal(false);
    clock.t += 1000;
    expect(await b.allow('groq', 'm/x')).to.equal(true);
    await b.success('groq', 'm/x');
    expect(await a.allow('groq', 'm/x')).to.equal(true);
    expect(a.state('groq', 'm/x')).to.equal('closed');
  });

  it('a trial claimed by an instance that died lapses after the cooldown', async () => {
    for (let i = 0; i < 3; i++) await a.failure('openai', 'm/z');
    clock.t += 1000;
    expect(await a.allow('openai', 'm/z')).to.equal(true); // a claims the trial and "dies"
    expect(await b.allow('openai', 'm/z')).to.equal(false);
    clock.t += 1000;
    expect(await b.allow('openai', 'm/z')).to.equal(true);
  });

  it('snapshot: after a refresh an instance sees the breakers the other one opened', async () => {
    for (let i = 0; i < 3; i++) await a.failure('together', 'm/s');
    await b.refresh();
    expect(b.snapshot().find((x) => x.gateway === 'together')).to.deep.equal({ gateway: 'together', model: 'm/s', state: 'open', failures: 3 });
  });

  it('falls back to in-process breakers when Redis does not answer', async () => {
    const dead = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    dead.on('error', () => undefined);
    const c = new RedisBreakers(dead, 'x:', createLogger('silent'), 2, 1000, () => clock.t);
    expect(await c.allow('g', 'm')).to.equal(true);
    await c.failure('g', 'm');
    await c.failure('g', 'm');
    expect(await c.allow('g', 'm')).to.equal(false);
    expect(c.state('g', 'm')).to.equal('open');
    dead.disconnect();
  });
});
