import { expect } from 'chai';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/store/index.js';
import { UsageStats } from '../../src/stats/service.js';
import { segments } from '../../src/stats/window.js';
import { configFor, postgresAvailable, DIALECTS } from '../support/db.js';
import { knownTraffic, usage, NOW, MIN, HOUR, DAY, MODELS, DIRECTORY } from '../support/traffic.js';

const { G4, MINI, CLAUDE } = MODELS;

describe('statistics windows: segments cover a window exactly once', () => {
  const cover = (start: number, end: number | null, probe: number[]) => {
    const segs = segments({ start, end });
    return probe.map((t) => segs.filter((s) => (s.from === null || t >= s.from) && (s.to === null || t < s.to)).length);
  };
  it('a 24 h window ending mid-hour: raw head, hourly, daily; every instant inside is covered once, outside never', () => {
    const segs = segments({ start: NOW - DAY, end: null });
    expect(segs.map((s) => s.source)).to.deep.equal(['raw', 'hour', 'day']);
    expect(cover(NOW - DAY, null, [NOW - DAY, NOW - DAY + 1, NOW - 12 * HOUR, NOW - 1, NOW])).to.deep.equal([1, 1, 1, 1, 1]);
    expect(cover(NOW - DAY, null, [NOW - DAY - 1, NOW - DAY - 5 * MIN])).to.deep.equal([0, 0]);
  });
  it('a closed 30-day window and a closed window shorter than its hours', () => {
    const s = NOW - 60 * DAY;
    const e = NOW - 30 * DAY;
    expect(segments({ start: s, end: e }).map((x) => x.source)).to.deep.equal(['raw', 'hour', 'day', 'hour', 'raw']);
    expect(cover(s, e, [s, s + 1, s + DAY, e - 1, e, s - 1])).to.deep.equal([1, 1, 1, 1, 0, 0]);
    const a = NOW - 2 * HOUR; // 08:37:12 .. 09:37:12: no whole hour
    expect(segments({ start: a, end: a + HOUR }).map((x) => x.source)).to.deep.equal(['raw']);
    expect(cover(a, a + HOUR, [a, a + HOUR - 1, a + HOUR])).to.deep.equal([1, 1, 0]);
  });
});

for (const dialect of DIALECTS) {
  describe(`statistics on ${dialect}: known traffic, figures worked out by hand`, function () {
    let store: Store;
    let stats: UsageStats;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      store = await openStore(configFor(dialect));
      const rows = knownTraffic();
      // two batches: the rollups must add up across upserts
      await store.usage.insertMany(rows.slice(0, 6));
      await store.usage.insertMany(rows.slice(6));
      stats = new UsageStats(store.db, DIRECTORY, () => NOW);
    });
    after(async () => { await store?.close(); });

    it('provider stats, 1 h: totals, averages, percentiles, breakdown, tie-broken top model', async () => {
      const s = await stats.providerStats('openai', null, '1h');
      // r1, r2, r3 (error), r5 (cancelled: total only)
      expect(s).to.deep.include({
        provider: 'openai', gateway: null, time_range: '1h', total_requests: 4, successful_requests: 2, failed_requests: 1,
        prompt_tokens: 360, completion_tokens: 155, total_tokens: 515, total_cost_usd: 0.0046,
        avg_latency_ms: 1500, avg_time_to_first_token_ms: 200, avg_tokens_per_second: 56.25, top_model: G4,
      });
      expect(s.model_breakdown).to.deep.equal([
        { model: G4, requests: 2, tokens: 450, cost_usd: 0.0045, avg_latency_ms: 1500 },
        { model: MINI, requests: 2, tokens: 65, cost_usd: 0.0001, avg_latency_ms: null },
      ]);
      expect(s.speed_metrics).to.deep.equal({ p50_latency_ms: 1000, p95_latency_ms: 2000, avg_tokens_per_second: 56.25 });
      expect(s.period).to.deep.equal({ start: new Date(NOW - HOUR).toISOString(), end: new Date(NOW).toISOString() });
    });

    it('provider stats, 24 h: r6–r8 added, r9 (5 min before the window, same clock hour as r8) left out', async () => {
      const s = await stats.providerStats('openai', null, '24h');
      expect(s).to.deep.include({
        total_requests: 7, successful_requests: 4, failed_requests: 2, prompt_tokens: 1760, completion_tokens: 356,
        total_tokens: 2116, total_cost_usd: 0.0154, avg_latency_ms: 2000.25, avg_time_to_first_token_ms: 600,
        avg_tokens_per_second: 290.63, top_model: G4,
      });
      expect(s.model_breakdown).to.deep.equal([
        { model: G4, requests: 4, tokens: 1451, cost_usd: 0.0145, avg_latency_ms: 1333.67 },
        { model: MINI, requests: 3, tokens: 665, cost_usd: 0.0009, avg_latency_ms: 4000 },
      ]);
      // successful latencies 1000, 1001, 2000, 4000: nearest rank 2 and 4
      expect(s.speed_metrics).to.deep.include({ p50_latency_ms: 1001, p95_latency_ms: 4000 });
    });

    it('provider stats with a gateway filter; an unknown provider answers zeros', async () => {
      const s = await stats.providerStats('openai', 'openai', '24h');
      expect(s).to.deep.include({ gateway: 'openai', total_requests: 4, successful_requests: 3, failed_requests: 1, total_tokens: 1951 });
      const byAlias = await stats.providerStats('openai', 'or', '1h');
      expect(byAlias).to.deep.include({ gateway: 'openrouter', total_requests: 2, successful_requests: 1 });
      const none = await stats.providerStats('nobody', null, 'all');
      expect(none).to.deep.include({ total_requests: 0, total_cost_usd: 0, avg_latency_ms: null, top_model: null, model_breakdown: [] });
      expect(none.speed_metrics).to.deep.equal({ p50_latency_ms: null, p95_latency_ms: null, avg_tokens_per_second: null });
    });

    it('gateway stats over four ranges: distinct users, models, providers; failures; 404 for an unconfigured id', async () => {
      const h = await stats.gatewayStats('openrouter', '1h');
      expect(h).to.deep.include({
        gateway: 'openrouter', total_requests: 2, successful_requests: 1, failed_requests: 0, total_tokens: 165,
        total_cost_usd: 0.0016, unique_users: 2, unique_models: 2, unique_providers: 1, top_provider: 'openai',
      });
      expect(h!.provider_breakdown).to.deep.equal([{ provider: 'openai', requests: 2, tokens: 165, cost_usd: 0.0016 }]);
      expect(h!.performance).to.deep.equal({ avg_latency_ms: 1000, p95_latency_ms: 1000, avg_time_to_first_token_ms: 200,
        avg_tokens_per_second: 62.5, success_rate: 0.5 });
      expect(await stats.gatewayStats('openrouter', '24h')).to.deep.include({ total_requests: 3, failed_requests: 1, unique_users: 2 });
      expect(await stats.gatewayStats('or', '7d')).to.deep.include({ gateway: 'openrouter', total_requests: 4, failed_requests: 2, unique_users: 2 });
      const users = await Promise.all((['1h', '24h', '7d', 'all'] as const).map(async (r) => (await stats.gatewayStats('openai', r))!.unique_users));
      expect(users).to.deep.equal([2, 4, 5, 6]);
      expect(await stats.gatewayStats('nowhere', '24h')).to.equal(undefined);
      const groq = await stats.gatewayStats('groq-cloud', '24h');
      expect(groq).to.deep.include({ gateway: 'groq', total_requests: 0, unique_users: 0, top_provider: null });
      expect(groq!.performance.success_rate).to.equal(null);
    });

    it('gateways summary: every configured gateway, ordered; totals are distinct counts, not sums', async () => {
      const s = await stats.gatewaysSummary('1h');
      expect(s.gateways.map((g) => [g.gateway, g.total_requests, g.unique_users, g.unique_models])).to.deep.equal([
        ['openai', 2, 2, 2], ['openrouter', 2, 2, 2], ['anthropic', 1, 1, 1], ['groq', 0, 0, 0],
      ]);
      expect(s.gateways[0]).to.deep.include({ total_tokens: 350, total_cost_usd: 0.003, success_rate: 0.5, avg_latency_ms: 2000 });
      expect(s.totals).to.deep.equal({ total_requests: 5, total_tokens: 845, total_cost_usd: 0.0066, unique_users: 3, unique_models: 3, active_gateways: 3 });
      const d = await stats.gatewaysSummary('24h');
      expect(d.totals).to.deep.include({ total_requests: 8, unique_users: 4, unique_models: 3, active_gateways: 3 });
      expect((await stats.gatewaysSummary('all')).totals).to.deep.include({ total_requests: 11, unique_users: 6 });
    });

    it('top models: order, rank, distinct users, success rate, paging', async () => {
      const t = await stats.providerTopModels('openai', '24h', 5, 0);
      expect(t).to.deep.include({ provider: 'openai', time_range: '24h', total: 2, limit: 5, offset: 0 });
      expect(t.models).to.deep.equal([
        { rank: 1, model: G4, requests: 4, tokens: 1451, cost_usd: 0.0145, unique_users: 3, avg_latency_ms: 1333.67, success_rate: 0.75 },
        { rank: 2, model: MINI, requests: 3, tokens: 665, cost_usd: 0.0009, unique_users: 3, avg_latency_ms: 4000, success_rate: 0.3333 },
      ]);
      const p2 = await stats.providerTopModels('openai', '24h', 1, 1);
      expect(p2.models.map((m) => [m.rank, m.model])).to.deep.equal([[2, MINI]]);
      expect(p2.total).to.equal(2);
      expect((await stats.providerTopModels('nobody', 'all', 5, 0)).models).to.deep.equal([]);
    });

    it('trending: each sort metric, gateways, growth against the previous window', async () => {
      const r = await stats.trending(null, '24h', 'requests', 10, 0);
      expect(r).to.deep.include({ total: 3, time_range: '24h', sort_by: 'requests', gateway: 'all' });
      expect(r.models).to.deep.equal([
        // previous 24 h: r9 (gpt-4o, user 5, 10 tokens)
        { rank: 1, model: G4, provider: 'openai', gateways: ['openai', 'openrouter'], requests: 4, tokens: 1451, unique_users: 3, growth_percent: 300 },
        { rank: 2, model: MINI, provider: 'openai', gateways: ['openai', 'openrouter'], requests: 3, tokens: 665, unique_users: 3, growth_percent: null },
        { rank: 3, model: CLAUDE, provider: 'anthropic', gateways: ['anthropic'], requests: 1, tokens: 330, unique_users: 1, growth_percent: null },
      ]);
      const users = await stats.trending(null, '24h', 'users', 10, 0);
      expect(users.models.map((m) => [m.model, m.unique_users, m.growth_percent])).to.deep.equal([[G4, 3, 200], [MINI, 3, null], [CLAUDE, 1, null]]);
      const tokens = await stats.trending(null, '24h', 'tokens', 2, 1);
      expect(tokens.models.map((m) => [m.rank, m.model, m.growth_percent])).to.deep.equal([[2, MINI, null], [3, CLAUDE, null]]);
      expect((await stats.trending(null, '24h', 'tokens', 1, 0)).models[0].growth_percent).to.equal(14410);
      const or = await stats.trending('or', '24h', 'requests', 10, 0);
      expect(or.gateway).to.equal('openrouter');
      expect(or.models.map((m) => [m.model, m.requests, m.gateways])).to.deep.equal([[G4, 2, ['openrouter']], [MINI, 1, ['openrouter']]]);
      const hour = await stats.trending('all', '1h', 'requests', 10, 0);
      expect(hour.models.map((m) => [m.model, m.requests, m.growth_percent])).to.deep.equal([[G4, 2, null], [MINI, 2, null], [CLAUDE, 1, null]]);
    });

    it('records written in one batch and across batches give the same rollups as rebuilding them from the raw rows', async () => {
      const dump = async () => (await sql<Record<string, unknown>>`select grain, period, gateway, provider, model, requests, successes, failures,
        prompt_tokens, completion_tokens, cost_nano, latency_sum, ttft_sum, ttft_n, tps_n, round(cast(tps_sum as numeric), 6) as tps
        from usage_rollup order by grain, period, gateway, provider, model`.execute(store.db)).rows.map((r) => JSON.stringify(Object.values(r).map(String)));
      const seen = async () => (await sql<Record<string, unknown>>`select scope_gateway, scope_model, user_id, last_at from usage_user_seen
        order by scope_gateway, scope_model, user_id`.execute(store.db)).rows.map((r) => JSON.stringify(Object.values(r).map(String)));
      const before = [await dump(), await seen()];
      await store.usage.rebuildRollups();
      expect([await dump(), await seen()]).to.deep.equal(before);
      expect(before[0].length).to.be.greaterThan(10);
    });

    it('probes are never usage: health observations leave usage_records and statistics untouched', async () => {
      const n = await store.usage.count();
      await store.health.record([{ gateway: 'openai', model: G4, provider: 'openai', ok: false, status: 'error', latencyMs: 10, error: 'x', ts: NOW - MIN, source: 'probe' }]);
      expect(await store.usage.count()).to.equal(n);
      expect((await stats.providerStats('openai', null, '1h')).total_requests).to.equal(4);
    });

    it('a record without a key owner counts in totals but not in distinct users', async () => {
      await store.usage.insertMany([usage({ provider: 'solo', gateway: 'groq', model: 'solo/m', status: 'success', prompt: 1, completion: 1,
        costNano: 1, latency: 10, user: null, ago: MIN })]);
      expect(await stats.gatewayStats('groq', '1h')).to.deep.include({ total_requests: 1, unique_users: 0 });
    });

    it('trending by users with a gateway: the previous window counts only that gateway\'s users of the model', async () => {
      const M = 'solo/trend';
      const rec = (gateway: string, user: number, ago: number) => usage({ provider: 'solo', gateway, model: M, status: 'success', prompt: 1,
        completion: 1, costNano: 1, latency: 10, user, ago });
      // previous 24 h: users 7 and 8 through groq, 9 through anthropic; this window: user 7 through groq
      await store.usage.insertMany([rec('groq', 7, DAY + HOUR), rec('groq', 8, DAY + 2 * HOUR), rec('anthropic', 9, DAY + 3 * HOUR), rec('groq', 7, HOUR)]);
      const growth = async (gw: string | null) => (await stats.trending(gw, '24h', 'users', 10, 0)).models.find((m) => m.model === M);
      expect(await growth('groq-cloud')).to.deep.include({ unique_users: 1, growth_percent: -50 }); // 1 against 2
      expect(await growth(null)).to.deep.include({ unique_users: 1, growth_percent: -66.67 }); // 1 against 3
    });
  });
}
