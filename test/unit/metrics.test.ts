import { expect } from 'chai';
import client from 'prom-client';
import { LabelledCounter, LabelledHistogram, Metrics } from '../../src/metrics.js';
import { Breakers } from '../../src/engine/breaker.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The gateway's own counter and histogram (src/metrics.ts) are printed by prom-client's registry: fed the same
 * values, they must print exactly what prom-client's own Counter and Histogram print.
 */
describe('metrics: the labelled counter and histogram', () => {
  it('print what prom-client prints for the same increments and observations, label escaping included', async () => {
    const theirs = new client.Registry();
    const ours = new client.Registry();
    const c1 = new client.Counter({ name: 'x_total', help: 'Help with a \\ backslash.', labelNames: ['operation', 'status'], registers: [theirs] });
    const c2 = new LabelledCounter('x_total', 'Help with a \\ backslash.', ['operation', 'status'], ours);
    const h1 = new client.Histogram({ name: 'x_seconds', help: 'Latency.', labelNames: ['gateway', 'outcome'], buckets: BUCKETS, registers: [theirs] });
    const h2 = new LabelledHistogram('x_seconds', 'Latency.', ['gateway', 'outcome'], BUCKETS, ours);
    const ops = ['createChatCompletion', 'createMessage', 'a "quoted"\nname\\'];
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 500; i++) {
      const op = ops[Math.floor(rnd() * ops.length)];
      const status = [200, 400, 502][Math.floor(rnd() * 3)];
      const by = i % 7 === 0 ? 2.5 : 1;
      c1.inc({ operation: op, status: String(status) }, by);
      c2.inc([op, status], by);
      // every bucket edge, values between, above the last bucket and 0
      const v = i < BUCKETS.length ? BUCKETS[i] : i % 50 === 0 ? 1000 : i % 51 === 0 ? 0 : rnd() * 3;
      const gw = i % 3 ? 'openai' : 'groq';
      const outcome = i % 5 ? 'success' : 'server_error';
      h1.observe({ gateway: gw, outcome }, v);
      h2.observe([gw, outcome], v);
    }
    const text = await ours.metrics();
    expect(text).to.equal(await theirs.metrics());
    expect(text).to.contain('x_seconds_bucket{le="0.005",gateway="openai",outcome="success"}');
    expect(text).to.contain('operation="a \\"quoted\\"\\nname\\\\"');
  });

  it('refuse a counter going down or by a non-finite amount, and a non-finite observation; nothing is counted', async () => {
    const r = new client.Registry();
    const c = new LabelledCounter('y_total', 'y', ['a'], r);
    const h = new LabelledHistogram('y_seconds', 'y', ['a'], [1], r);
    expect(() => c.inc(['x'], -1)).to.throw(RangeError);
    expect(() => c.inc(['x'], NaN)).to.throw(RangeError);
    expect(() => c.inc(['x'], Infinity)).to.throw(RangeError);
    expect(() => h.observe(['x'], NaN)).to.throw(RangeError);
    expect(() => h.observe(['x'], -Infinity)).to.throw(RangeError);
    expect((await c.get()).values).to.deep.equal([]);
    expect((await h.get()).values).to.deep.equal([]);
  });

  it('the metric names are registered once: a second metric of the same name is refused', () => {
    const r = new client.Registry();
    new LabelledCounter('z_total', 'z', ['a'], r);
    expect(() => new LabelledCounter('z_total', 'z', ['a'], r)).to.throw(/already been registered/);
  });
});

describe('metrics: Metrics', () => {
  const value = (text: string, line: string) => {
    const hit = text.split('\n').find((l) => l.startsWith(line + ' '));
    return hit === undefined ? undefined : Number(hit.slice(line.length + 1));
  };

  it('cost is counted in nano-USD and printed in USD; tokens and requests per gateway, provider and status', async () => {
    const m = new Metrics({ defaultMetrics: false });
    const rec = (cost_nano: number, status = 'success') => ({ gateway: 'openai', provider: 'openai', status, prompt_tokens: 10, completion_tokens: 5, cached_tokens: 0, cost_nano }) as any;
    m.usage(Array.from({ length: 10 }, () => rec(100_000_001)));
    m.usage([rec(0, 'error')]);
    const { body } = await m.render();
    expect(value(body, 'gateway_cost_usd_total{gateway="openai",provider="openai"}')).to.equal(1.00000001);
    expect(value(body, 'gateway_tokens_total{gateway="openai",provider="openai",type="prompt"}')).to.equal(110);
    expect(value(body, 'gateway_tokens_total{gateway="openai",provider="openai",type="cached"}')).to.equal(undefined);
    expect(value(body, 'gateway_usage_records_total{gateway="openai",provider="openai",status="success"}')).to.equal(10);
    expect(value(body, 'gateway_usage_records_total{gateway="openai",provider="openai",status="error"}')).to.equal(1);
  });

  it('the breaker gauge reads the breakers at each scrape (worst model per gateway) and keeps a gateway that closed again at 0', async () => {
    let t = 0;
    const breakers = new Breakers(2, 1000, () => t);
    const m = new Metrics({ defaultMetrics: false, breakers });
    const gauge = async (gw: string) => value((await m.render()).body, `gateway_circuit_breaker_state{gateway="${gw}"}`);
    expect(await gauge('openai')).to.equal(undefined);
    breakers.failure('openai', 'a');
    breakers.failure('openai', 'a');
    breakers.failure('openai', 'b');
    expect(await gauge('openai')).to.equal(2);
    t = 1000; // cooled down: half-open
    expect(await gauge('openai')).to.equal(1);
    breakers.allow('openai', 'a');
    breakers.success('openai', 'a');
    breakers.success('openai', 'b');
    expect(await gauge('openai')).to.equal(0);
  });

  it("the memory trimmer's counts are read at each scrape", async () => {
    const m = new Metrics({ defaultMetrics: false });
    const trimmer = { trims: 0, released: 0, reductions: 0, reducedBytes: 0, quietSpellMs: 30_000 };
    m.watchMemoryTrim(trimmer);
    expect(value((await m.render()).body, 'gateway_memory_trims_total')).to.equal(0);
    expect(value((await m.render()).body, 'gateway_memory_reductions_total')).to.equal(0);
    expect(value((await m.render()).body, 'gateway_memory_quiet_spell_seconds')).to.equal(30);
    trimmer.trims = 3;
    trimmer.released = 75_000_000;
    trimmer.reductions = 2;
    trimmer.reducedBytes = 41_000_000;
    trimmer.quietSpellMs = 120_000;
    const { body } = await m.render();
    expect(value(body, 'gateway_memory_trims_total')).to.equal(3);
    expect(value(body, 'gateway_memory_trim_released_bytes_total')).to.equal(75_000_000);
    expect(value(body, 'gateway_memory_reductions_total')).to.equal(2);
    expect(value(body, 'gateway_memory_reduction_released_bytes_total')).to.equal(41_000_000);
    expect(value(body, 'gateway_memory_quiet_spell_seconds')).to.equal(120);
    expect(body).to.include('# TYPE gateway_memory_quiet_spell_seconds gauge');
    expect(body).to.include('# TYPE gateway_memory_trims_total counter');
    expect(body).to.include('# TYPE gateway_memory_reductions_total counter');
  });
});
