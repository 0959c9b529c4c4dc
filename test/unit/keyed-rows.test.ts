import { expect } from 'chai';
import { KeyedRows } from '../../src/store/keyed-rows.js';
import { healthBucketDeltas, usageDeltas } from '../../src/store/rollups.js';
import type { HealthObservation } from '../../src/store/health.js';
import { usage, HOUR, DAY, MIN } from '../support/traffic.js';

describe('KeyedRows: rows found by the parts of their key, sorted as the joined key strings', () => {
  it('finds a row only by all its parts, numbers and strings apart (1 is not "1"), and sorts by the joined key', () => {
    const rows = new KeyedRows<string>();
    rows.add(['b', 2, 'x'], 'b2x');
    rows.add(['a', 10, 'x'], 'a10x');
    rows.add(['a', 9, 'x'], 'a9x');
    rows.add(['a', 9, ''], 'a9');
    expect(rows.get(['b', 2, 'x'])).to.equal('b2x');
    expect(rows.get(['b', '2', 'x'])).to.equal(undefined);
    expect(rows.get(['c', 2, 'x'])).to.equal(undefined);
    expect(rows.size).to.equal(4);
    // '1' < '9' in the strings: 10 sorts before 9, as the key strings `a\u000010\u0000x` and `a\u00009\u0000x` do
    expect(rows.sorted()).to.deep.equal(['a10x', 'a9', 'a9x', 'b2x']);
  });
});

describe('flush deltas: the same rows, in the same order, as with one key string per row', () => {
  // The rule before session 31: a key string per record, rows sorted by it.
  const byString = <T>(items: Array<[string, T]>, merge: (a: T, b: T) => void) => {
    const m = new Map<string, T>();
    for (const [k, v] of items) { const had = m.get(k); if (had) merge(had, v); else m.set(k, v); }
    return [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  };

  it('usage: rollup rows per grain, period, gateway, provider and model; last-seen rows per scope and user', () => {
    const records = [];
    let i = 0;
    for (const gateway of ['openai', 'azure', 'sim']) {
      for (const model of ['openai/gpt-4o', 'openai/gpt-4o-mini']) {
        for (const ago of [5 * MIN, 50 * MIN, 2 * HOUR, 30 * HOUR]) {
          i++;
          records.push(usage({ provider: 'openai', gateway, model, status: i % 5 ? 'success' : 'error', prompt: i, completion: 2 * i,
            costNano: 1000 * i, latency: 10 + i, ttft: i % 3 ? i : null, user: i % 4 === 0 ? null : (i % 3) + 1, ago }));
        }
      }
    }
    const d = usageDeltas(records);
    const rollupKeys = d.rollup.map((r) => `${r.grain}\u0000${r.period}\u0000${r.gateway}\u0000${r.provider}\u0000${r.model}`);
    expect(rollupKeys).to.deep.equal([...new Set(rollupKeys)].sort());
    const expected = byString(records.flatMap((r) => (['hour', 'day'] as const).map((grain): [string, { n: number; tokens: number; cost: number }] => {
      const period = r.created_at - (r.created_at % (grain === 'hour' ? HOUR : DAY));
      return [`${grain}\u0000${period}\u0000${r.gateway}\u0000${r.provider}\u0000${r.model}`,
        { n: 1, tokens: (r.prompt_tokens ?? 0) + (r.completion_tokens ?? 0), cost: r.cost_nano ?? 0 }];
    })), (a, b) => { a.n += b.n; a.tokens += b.tokens; a.cost += b.cost; });
    expect(d.rollup.map((r) => ({ n: r.requests, tokens: r.prompt_tokens + r.completion_tokens, cost: r.cost_nano }))).to.deep.equal(expected);
    expect(d.rollup.reduce((s, r) => s + r.requests, 0)).to.equal(2 * records.length);

    const seenExpected = byString(records.filter((r) => r.user_id != null).flatMap((r) =>
      [['', ''], [r.gateway, ''], ['', r.model], [r.gateway, r.model]].map(([g, m]): [string, { g: string; m: string; user: number; last: number }] =>
        [`${g}\u0000${m}\u0000${r.user_id}`, { g, m, user: r.user_id!, last: r.created_at }])),
    (a, b) => { a.last = Math.max(a.last, b.last); });
    expect(d.seen.map((s) => ({ g: s.scope_gateway, m: s.scope_model, user: s.user_id, last: s.last_at }))).to.deep.equal(seenExpected);
    expect(d.seen.length).to.be.greaterThan(10);
  });

  it('health: bucket rows per gateway, model and bucket, in key order', () => {
    const t0 = 1_764_201_234_000;
    const obs: HealthObservation[] = [];
    for (let i = 0; i < 40; i++) {
      obs.push({ gateway: ['sim', 'openai', 'azure'][i % 3], model: i % 2 ? 'm-b' : 'm-a', provider: 'openai', ok: i % 7 !== 0, status: 'success',
        latencyMs: i % 5 ? 100 + i : null, error: null, ts: t0 + i * 2 * MIN, source: 'passive' });
    }
    const rows = healthBucketDeltas(obs);
    const expected = byString(obs.map((o): [string, { calls: number; ok: number; sum: number; n: number }] => {
      const bucket = o.ts - (o.ts % (5 * MIN));
      return [`${o.gateway}\u0000${o.model}\u0000${bucket}`, { calls: 1, ok: o.ok ? 1 : 0, sum: o.latencyMs ?? 0, n: o.latencyMs == null ? 0 : 1 }];
    }), (a, b) => { a.calls += b.calls; a.ok += b.ok; a.sum += b.sum; a.n += b.n; });
    expect(rows.map((b) => ({ calls: b.calls, ok: b.successes, sum: b.latency_sum, n: b.latency_n }))).to.deep.equal(expected);
    expect(rows.map((b) => `${b.gateway}\u0000${b.model}\u0000${b.bucket}`)).to.deep.equal(
      rows.map((b) => `${b.gateway}\u0000${b.model}\u0000${b.bucket}`).sort());
  });
});
