/** RateLimiter: order of checks, headers, per-key overrides, tokens from usage records, failing open. */
import { expect } from 'chai';
import { RateLimiter } from '../../src/limits/limiter.js';
import { MemoryLimitBackend, type LimitBackend } from '../../src/limits/backend.js';
import { ApiError } from '../../src/errors.js';
import { createLogger } from '../../src/logger.js';
import type { KeyLimits } from '../../src/store/limits.js';
import type { UsageRecord } from '../../src/store/usage.js';

const T0 = 1_800_000_000_000;
const key = (keyId: number) => ({ keyId, userId: keyId, admin: false });

function limiter(defaults: { requestsPerMinute: number; tokensPerMinute: number; concurrentRequests: number }, opts: {
  own?: Record<number, KeyLimits>; backend?: LimitBackend; clock?: { t: number };
} = {}) {
  const own = opts.own ?? {};
  const repo = { get: async (id: number) => own[id], set: async (id: number, l: KeyLimits) => { own[id] = l; } };
  const keys = { get: async (id: number) => (id < 100 ? ({ id } as any) : undefined) };
  const clock = opts.clock ?? { t: T0 };
  return new RateLimiter(opts.backend ?? new MemoryLimitBackend(), defaults, repo as any, keys, createLogger('silent'), () => clock.t);
}

async function refused(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected a 429');
}

const usage = (keyId: number, prompt: number, completion: number) => ({ key_id: keyId, prompt_tokens: prompt, completion_tokens: completion } as UsageRecord);

describe('RateLimiter', () => {
  it('requests per minute: headers count down; the refusal is a 429 with Retry-After and the window reset', async () => {
    const clock = { t: T0 + 250 };
    const l = limiter({ requestsPerMinute: 2, tokensPerMinute: 0, concurrentRequests: 0 }, { clock });
    const a = await l.admit(key(1));
    expect(a!.headers).to.deep.equal({ 'X-RateLimit-Limit': '2', 'X-RateLimit-Remaining': '1', 'X-RateLimit-Reset': '60' });
    clock.t = T0 + 20_000;
    expect((await l.admit(key(1)))!.headers['X-RateLimit-Remaining']).to.equal('0');
    const e = await refused(l.admit(key(1)));
    expect(e.status).to.equal(429);
    expect(e.code).to.equal('rate_limit_requests');
    expect(e.type).to.equal('rate_limit_error');
    // the oldest request (second T0) leaves the window at T0 + 60 s: 40 s from now
    expect(e.headers).to.deep.equal({ 'X-RateLimit-Limit': '2', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '40', 'Retry-After': '40' });
    // other keys are not affected; the admin credential and guests are not limited per key
    expect(await l.admit(key(2))).to.not.equal(null);
    expect(await l.admit({ keyId: 0, userId: 0, admin: true })).to.equal(null);
    expect(await l.admit(null)).to.equal(null);
  });

  it('renewal: the live leases are renewed; a key whose leases were all released is not, and its set is dropped', async () => {
    const backend = new MemoryLimitBackend();
    const renewed: Array<[string, string[]]> = [];
    const renew = backend.renew.bind(backend);
    backend.renew = async (k, leases, now) => {
      renewed.push([k, leases]);
      return renew(k, leases, now);
    };
    const l = limiter({ requestsPerMinute: 0, tokensPerMinute: 0, concurrentRequests: 2 }, { backend });
    const sets = () => (l as unknown as { leases: Map<string, Set<string>> }).leases;
    const run = () => (l as unknown as { renew: () => Promise<void> }).renew();
    const a = await l.admit(key(1));
    const b = await l.admit(key(2));
    const c = await l.admit(key(2));
    a!.release();
    expect(sets().size).to.equal(2); // key 1's set outlives its last lease until the renewal
    await run();
    expect(renewed.map(([k, leases]) => [k, leases.length])).to.deep.equal([['k2', 2]]);
    expect([...sets().keys()]).to.deep.equal(['k2']);
    b!.release();
    c!.release();
    await run();
    expect(renewed).to.have.length(1);
    expect(sets().size).to.equal(0);
    // the slots are free: two are admitted again on each key
    const again = await Promise.all([l.admit(key(1)), l.admit(key(1)), l.admit(key(2)), l.admit(key(2))]);
    expect(again.every(Boolean)).to.equal(true);
    await refused(l.admit(key(1)));
  });

  it('concurrency: a slot per request until released; a request refused by the minute limit keeps no slot', async () => {
    const l = limiter({ requestsPerMinute: 3, tokensPerMinute: 0, concurrentRequests: 2 });
    const a = await l.admit(key(1));
    const b = await l.admit(key(1));
    const e = await refused(l.admit(key(1)));
    expect(e.code).to.equal('rate_limit_concurrency');
    expect(e.headers['Retry-After']).to.equal('1');
    a!.release();
    a!.release(); // twice is once
    const c = await l.admit(key(1)); // third request of the minute
    b!.release();
    c!.release();
    const d = await refused(l.admit(key(1))); // fourth of the minute: refused, and its slot given back
    expect(d.code).to.equal('rate_limit_requests');
    const l2 = await l.admit(key(2));
    expect(l2).to.not.equal(null);
    // both slots of key 1 are free: with the minute limit lifted (override), two are admitted again
    await l.update(1, { requests_per_minute: 0 });
    const x = await l.admit(key(1));
    const y = await l.admit(key(1));
    expect([x, y].every(Boolean)).to.equal(true);
    expect(x!.headers).to.deep.equal({}); // no minute limit, no headers
  });

  it('tokens per minute: counted from usage records; refused once the minute is spent, until the tokens age out', async () => {
    const clock = { t: T0 };
    const l = limiter({ requestsPerMinute: 0, tokensPerMinute: 100, concurrentRequests: 0 }, { clock });
    expect((await l.admit(key(1)))!.headers).to.deep.equal({ 'X-RateLimit-Limit-Tokens': '100', 'X-RateLimit-Remaining-Tokens': '100' });
    l.countUsage([usage(1, 60, 30), usage(2, 500, 0), { ...usage(0, 9, 9) }]);
    await new Promise((r) => setImmediate(r));
    expect((await l.admit(key(1)))!.headers['X-RateLimit-Remaining-Tokens']).to.equal('10');
    l.countUsage([usage(1, 5, 5)]);
    await new Promise((r) => setImmediate(r));
    clock.t = T0 + 15_000;
    const e = await refused(l.admit(key(1)));
    expect(e.code).to.equal('rate_limit_tokens');
    expect(e.headers).to.deep.equal({ 'X-RateLimit-Limit-Tokens': '100', 'X-RateLimit-Remaining-Tokens': '0', 'Retry-After': '45' });
    await refused(l.admit(key(2)));
    clock.t = T0 + 60_000;
    expect(await l.admit(key(1))).to.not.equal(null);
  });

  it('per-key overrides: a number replaces the default, null returns to it, 0 is unlimited; unknown keys are undefined', async () => {
    const l = limiter({ requestsPerMinute: 600, tokensPerMinute: 1000, concurrentRequests: 8 }, { own: { 3: { requests_per_minute: 1, tokens_per_minute: null, concurrent_requests: 0 } } });
    expect(await l.describe(3)).to.deep.equal({
      key_id: 3,
      overrides: { requests_per_minute: 1, tokens_per_minute: null, concurrent_requests: 0 },
      effective: { requests_per_minute: 1, tokens_per_minute: 1000, concurrent_requests: 0 },
    });
    await l.admit(key(3));
    expect((await refused(l.admit(key(3)))).code).to.equal('rate_limit_requests');
    const v = await l.update(3, { requests_per_minute: null, concurrent_requests: 2 });
    expect(v!.effective).to.deep.equal({ requests_per_minute: 600, tokens_per_minute: 1000, concurrent_requests: 2 });
    expect(await l.admit(key(3))).to.not.equal(null);
    expect(await l.describe(999)).to.equal(undefined);
    expect(await l.update(999, {})).to.equal(undefined);
  });

  it("a key's limits in use are read again in the background at half their TTL: no request waits for it; a change made here is not undone by a read begun before it; a failed read leaves them to the TTL", async () => {
    const clock = { t: T0 };
    const own: Record<number, KeyLimits> = {};
    const held: Array<() => void> = [];
    const g = { gets: 0, holdNext: false, fail: false };
    const repo = {
      get: async (id: number) => {
        g.gets++;
        if (g.fail) throw new Error('database away');
        const row = own[id] && { ...own[id] };
        if (g.holdNext) {
          g.holdNext = false;
          await new Promise<void>((r) => held.push(r));
        }
        return row;
      },
      set: async (id: number, l: KeyLimits) => { own[id] = l; },
    };
    const keys = { get: async (id: number) => ({ id } as any) };
    const l = new RateLimiter(new MemoryLimitBackend(), { requestsPerMinute: 5, tokensPerMinute: 0, concurrentRequests: 0 }, repo as any, keys,
      createLogger('silent'), () => clock.t);
    const until = async (done: () => boolean) => { for (let i = 0; i < 50 && !done(); i++) await new Promise((r) => setImmediate(r)); };
    const rpm = () => { const lim = l.limitsFor(1); expect(lim).to.not.be.an.instanceOf(Promise); return (lim as { requestsPerMinute: number }).requestsPerMinute; };

    expect(await l.limitsFor(1)).to.include({ requestsPerMinute: 5 }); // the first read is on the path
    expect(g.gets).to.equal(1);
    clock.t += 2_500; // half the TTL: not yet
    expect(rpm()).to.equal(5);
    expect(g.gets).to.equal(1);
    own[1] = { requests_per_minute: 7, tokens_per_minute: null, concurrent_requests: null }; // set by another instance
    clock.t += 1; // past half the TTL: answered from the cache, read again once in the background
    expect(rpm()).to.equal(5);
    expect(rpm()).to.equal(5);
    expect(g.gets).to.equal(2);
    await until(() => rpm() === 7);
    expect(rpm()).to.equal(7);
    expect(g.gets).to.equal(2);
    expect((await l.admit(key(1)))!.headers['X-RateLimit-Limit']).to.equal('7');

    // a background read that read 7, held back while the admin sets 9 here: it does not put 7 back
    clock.t += 2_501;
    g.holdNext = true;
    expect(rpm()).to.equal(7);
    await until(() => held.length === 1);
    expect((await l.update(1, { requests_per_minute: 9 }))!.effective.requests_per_minute).to.equal(9);
    held.shift()!();
    await until(() => false);
    expect(rpm()).to.equal(9);

    // failed reads: nothing thrown at the requests, the cached limits answer until their TTL, each request after a failure tries again
    const gets = g.gets;
    g.fail = true;
    clock.t += 2_501;
    expect(rpm()).to.equal(9);
    await until(() => false);
    expect(rpm()).to.equal(9);
    expect(g.gets).to.equal(gets + 2);
    await until(() => false);
    clock.t += 2_500; // past the TTL: the read is on the path again, and its failure is the request's
    const onPath = l.limitsFor(1);
    expect(onPath).to.be.an.instanceOf(Promise);
    let err: unknown;
    await (onPath as Promise<unknown>).catch((e) => { err = e; });
    expect((err as Error)?.message).to.equal('database away');
    g.fail = false;

    // another key's background read made stale by that change is not cached, and its next request reads again
    const rpm2 = () => (l.limitsFor(2) as { requestsPerMinute: number }).requestsPerMinute;
    expect(await l.limitsFor(2)).to.include({ requestsPerMinute: 5 });
    clock.t += 2_501;
    const before = g.gets;
    g.holdNext = true;
    expect(rpm2()).to.equal(5);
    await until(() => held.length === 1);
    own[2] = { requests_per_minute: 11, tokens_per_minute: null, concurrent_requests: null }; // set by another instance
    l.forget(1); // a change here, to another key
    held.shift()!(); // key 2's read lands with 5, read before the change: not cached
    await until(() => false);
    expect(rpm2()).to.equal(5);
    expect(g.gets).to.equal(before + 2); // its next request read again, at once in the background
    await until(() => rpm2() === 11);
    expect(rpm2()).to.equal(11);
  });

  it('fails open when the backend fails (a Redis outage never blocks requests), whether it rejects or throws', async () => {
    const rejecting: LimitBackend = new MemoryLimitBackend();
    rejecting.take = async () => { throw new Error('connection is closed'); };
    rejecting.acquire = async () => { throw new Error('connection is closed'); };
    const throwing: LimitBackend = new MemoryLimitBackend();
    throwing.read = () => { throw new Error('broken'); };
    for (const backend of [rejecting, throwing]) {
      const l = limiter({ requestsPerMinute: 1, tokensPerMinute: 10, concurrentRequests: 1 }, { backend });
      for (let i = 0; i < 3; i++) expect(await l.admit(key(1))).to.equal(null);
    }
  });
});
