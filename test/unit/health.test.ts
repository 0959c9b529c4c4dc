import { expect } from 'chai';
import { openStore, type Store } from '../../src/store/index.js';
import { HealthService } from '../../src/health/service.js';
import { pruneHealth } from '../../src/store/health.js';
import { Recorder } from '../../src/engine/recorder.js';
import { createLogger } from '../../src/logger.js';
import type { HealthObservation } from '../../src/store/health.js';
import { configFor, postgresAvailable, DIALECTS } from '../support/db.js';
import { calls, seq, NOW, MIN, DAY } from '../support/traffic.js';

const iso = (t: number) => new Date(t).toISOString();
/** Start of the 24 h health window at NOW: the current 5-minute bucket (10:35) and the 287 before it. */
const WINDOW_START = NOW - (NOW % 300_000) - 287 * 300_000;
const at = (ts: number, ok: boolean, model: string, latencyMs: number | null = 100): HealthObservation =>
  ({ gateway: 'gw', provider: 'p', model, ok, status: ok ? 'success' : 'error', latencyMs, error: ok ? null : 'boom', ts, source: 'passive' });

/** Every status rule at its boundary, tiers, windows and uptime buckets: one model each on gateway `gw`. */
function statusScenario(): HealthObservation[] {
  const c = (model: string, outcomes: string, opts: Parameters<typeof calls>[4] = {}) => calls('gw', 'p', `p/${model}`, outcomes, opts);
  const B = NOW - (NOW % 300_000); // current bucket start
  const bucket = (start: number, outcomes: string) => outcomes.split('').map((o, i) => at(start + i * 1000, o === '1', 'p/uptime'));
  return [
    ...c('rate80', seq('0', 4, '1', 16)), // 0.80: not below 0.8, not 0.95 → degraded
    ...c('rate75', seq('0', 5, '1', 15)), // 0.75 → unhealthy
    ...c('rate95', seq('0', 1, '1', 19)), // 0.95, last ok, median 100 → healthy
    ...c('rate94', seq('0', 3, '1', 47)), // 0.94 → degraded
    ...c('last3', seq('1', 17, '0', 3)), // 0.85 but the last 3 failed → unhealthy
    ...c('lastfail', seq('1', 19, '0', 1)), // 0.95 but the last failed → degraded
    ...c('median10s', '111', { latency: [9000, 10000, 20000] }), // median exactly 10 s → healthy
    ...c('median-slow', '111', { latency: [9000, 10001, 20000] }), // 10.001 s → degraded
    ...c('median-even', '1111', { latency: [5000, 9000, 10001, 20000] }), // lower middle 9000 → healthy
    ...c('window50', seq('0', 10, '1', 50)), // the 10 failures are not among the last 50 → healthy
    ...c('old', '1', { endAgo: 2 * DAY }), // nothing in 24 h, something in 7 d → unknown, warm
    ...c('ancient', '1', { endAgo: 8 * DAY }), // → unknown, cold
    ...c('hot', seq('1', 100)), // 100 calls in 24 h → hot
    ...c('warm99', seq('1', 99)), // 99 → warm
    at(WINDOW_START - 1, false, 'p/edge'), at(WINDOW_START, true, 'p/edge'), // only the second is inside 24 h
    ...bucket(B - 60 * MIN, '01111'), ...bucket(B - 45 * MIN, '0111'), ...bucket(B - 30 * MIN, '11'), ...bucket(B - 15 * MIN, '1'),
    ...c('timeout', '1t'),
    ...c('thirty', seq('0', 3, '1', 7)), // error rate exactly 0.3
  ];
}

for (const dialect of DIALECTS) {
  describe(`model health on ${dialect}: known calls, figures worked out by hand`, function () {
    let store: Store;
    let health: HealthService;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      store = await openStore(configFor(dialect));
      await store.health.record(statusScenario());
      health = new HealthService(store.db, () => false, () => NOW);
    });
    after(async () => { await store?.close(); });

    const byModel = async () => new Map((await health.records()).rows.map((r) => [r.model.slice(2), r]));

    it('status at every threshold boundary, and tier', async () => {
      const m = await byModel();
      const got = Object.fromEntries([...m].map(([k, r]) => [k, `${r.status}/${r.tier}`]));
      expect(got).to.deep.equal({
        rate80: 'degraded/warm', rate75: 'unhealthy/warm', rate95: 'healthy/warm', rate94: 'degraded/warm',
        last3: 'unhealthy/warm', lastfail: 'degraded/warm', median10s: 'healthy/warm', 'median-slow': 'degraded/warm',
        'median-even': 'healthy/warm', window50: 'healthy/warm', old: 'unknown/warm', ancient: 'unknown/cold',
        hot: 'healthy/hot', warm99: 'healthy/warm', edge: 'healthy/warm', uptime: 'degraded/warm', timeout: 'unhealthy/warm', // 1 of 2
        thirty: 'unhealthy/warm',
      });
    });

    it('a record in full: 24 h counters, uptime by 5-minute buckets, last call', async () => {
      const { models } = await health.list('p', null, 100, 0);
      const rate80 = models.find((x) => x.model_id === 'p/rate80');
      // calls 10:17:12 … 10:36:12; buckets 10:15 (3 failures: down), 10:20 (1 failure, 4 ok: 0.8, up), 10:25, 10:30, 10:35 (up)
      expect(rate80).to.deep.equal({
        model_id: 'p/rate80', provider: 'p', gateway: 'gw', status: 'degraded', tier: 'warm', response_time_ms: 100,
        success_rate: 0.8, last_checked: iso(NOW - MIN), last_success: iso(NOW - MIN), last_failure: iso(NOW - 17 * MIN),
        error_count: 4, total_requests: 20, avg_response_time_ms: 100, uptime_percentage: 80, error_message: 'boom 3',
        last_call_status: 'success',
      });
      const up = models.find((x) => x.model_id === 'p/uptime')!;
      expect([up.total_requests, up.error_count, up.uptime_percentage]).to.deep.equal([12, 2, 75]);
      const edge = models.find((x) => x.model_id === 'p/edge')!;
      expect([edge.total_requests, edge.error_count, edge.last_failure]).to.deep.equal([1, 0, iso(WINDOW_START - 1)]);
      const old = models.find((x) => x.model_id === 'p/old')!;
      expect(old).to.deep.include({ total_requests: 0, success_rate: null, avg_response_time_ms: null, uptime_percentage: null });
      const t = models.find((x) => x.model_id === 'p/timeout')!;
      expect(t).to.deep.include({ last_call_status: 'timeout', response_time_ms: null, avg_response_time_ms: 100, total_requests: 2 });
      const w = models.find((x) => x.model_id === 'p/window50')!;
      expect([w.total_requests, w.error_count, w.success_rate]).to.deep.equal([60, 10, 0.8333]);
    });

    it('list: order, last-call-status filter, paging with the total before paging', async () => {
      const all = await health.list(null, null, 100, 0);
      expect(all.total).to.equal(18);
      expect(all.models.map((x) => x.model_id)).to.deep.equal([...all.models.map((x) => x.model_id)].sort());
      expect((await health.list(null, 'error', 100, 0)).models.map((x) => x.model_id)).to.deep.equal(['p/last3', 'p/lastfail']);
      expect((await health.list('p', 'timeout', 100, 0)).models.map((x) => x.model_id)).to.deep.equal(['p/timeout']);
      expect((await health.list('nobody', null, 100, 0)).total).to.equal(0);
      const page = await health.list(null, null, 2, 3);
      expect([page.total, page.models.map((x) => x.model_id)]).to.deep.equal([18, all.models.slice(3, 5).map((x) => x.model_id)]);
      expect((await health.list(null, null, 10, 50))).to.deep.include({ total: 18, models: [] });
    });

    it('unhealthy list: error rate at least the threshold (boundary included), min_calls, order', async () => {
      const u = await health.unhealthy(0.2, 10);
      expect(u.models.map((x) => [x.model_id, x.error_rate])).to.deep.equal([['p/thirty', 0.3], ['p/rate75', 0.25], ['p/rate80', 0.2]]);
      const low = await health.unhealthy(0.15, 10);
      // 0.1667 twice: more calls first
      expect(low.models.map((x) => x.model_id)).to.deep.equal(['p/thirty', 'p/rate75', 'p/rate80', 'p/window50', 'p/uptime', 'p/last3']);
      expect((await health.unhealthy(0.3, 10)).models.map((x) => x.model_id)).to.deep.equal(['p/thirty']);
      expect((await health.unhealthy(0.15, 21)).models.map((x) => x.model_id)).to.deep.equal(['p/window50']);
    });

    it('aggregate statistics over the last 24 h', async () => {
      expect(await health.stats()).to.deep.equal({
        total_models: 18, total_calls: 444, total_success: 411, total_errors: 33,
        average_response_time: 373.14, success_rate: 0.9257, // 165302 ms over 443 measured calls; 411 / 444
      });
    });

    it('detail: history newest first with its source, uptime windows', async () => {
      await store.health.record(calls('gw', 'p', 'p/hot', '0', { source: 'probe', endAgo: 30_000 }));
      const d = await health.detail('p', 'hot');
      expect(d!.model.model_id).to.equal('p/hot');
      expect(d!.history).to.have.length(100);
      expect(d!.history[0]).to.deep.equal({ timestamp: iso(NOW - 30_000), status: 'error', response_time_ms: 100, source: 'probe' });
      expect(d!.history[1]).to.deep.include({ timestamp: iso(NOW - MIN), status: 'success', source: 'passive' });
      // 21 buckets with calls (08:55 … 10:35); the probe's failure leaves 2 of 3 ok in 10:35: 20 of 21 up
      expect(d!.uptime).to.deep.equal({ h24: 95.24, d7: 95.24, d30: 95.24 });
      expect(await health.detail('p', 'missing')).to.equal(undefined);
    });
  });

  describe(`providers, system and incidents on ${dialect}`, function () {
    let store: Store;
    let health: HealthService;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      store = await openStore(configFor(dialect));
      const c = (prov: string, gw: string, model: string, outcomes: string, opts: Parameters<typeof calls>[4] = {}) =>
        calls(gw, prov, `${prov}/${model}`, outcomes, opts);
      await store.health.record([
        ...c('alpha', 'g1', 'a1', '1', { endAgo: 5 * MIN }), ...c('alpha', 'g1', 'a2', '1'), ...c('alpha', 'g1', 'a3', '1'),
        ...c('alpha', 'g1', 'a4', seq('1', 8, '0', 1, '1', 1), { endAgo: 3 * MIN }), // 1 of 4 degraded = 25 % → online
        ...c('alpha', 'g2', 'a1', '1', { endAgo: 2 * MIN }), ...c('alpha', 'g2', 'a2', '1'),
        ...c('alpha', 'g2', 'a5', seq('1', 9, '0', 1), { endAgo: 2 * MIN }), // 1 of 3 → degraded
        ...c('beta', 'g1', 'b1', '0'), ...c('beta', 'g1', 'b2', '1', { endAgo: 2 * DAY }), // all known unhealthy → outage
        ...c('gamma', 'g1', 'c1', '1', { endAgo: 3 * DAY }), // nothing known → unknown
        ...c('delta', 'g1', 'd1', '1'), ...c('delta', 'g1', 'd2', '0'), // an unhealthy one → degraded
      ]);
      health = new HealthService(store.db, () => true, () => NOW);
    });
    after(async () => { await store?.close(); });

    it('provider status per (provider, gateway), with counts, weighted uptime and latest failure', async () => {
      const p = await health.providers();
      expect(p.map((x) => [x.provider, x.gateway, x.status, x.total_models, x.healthy_models, x.degraded_models, x.unhealthy_models])).to.deep.equal([
        ['alpha', 'g1', 'online', 4, 3, 1, 0], ['alpha', 'g2', 'degraded', 3, 2, 1, 0], ['beta', 'g1', 'outage', 2, 0, 0, 1],
        ['delta', 'g1', 'degraded', 2, 1, 0, 1], ['gamma', 'g1', 'unknown', 1, 0, 0, 0],
      ]);
      const delta = p.find((x) => x.provider === 'delta')!;
      expect(delta).to.deep.include({ overall_uptime: 50, avg_response_time_ms: 100, last_checked: iso(NOW - MIN), error_message: 'boom 0' });
      expect(p.find((x) => x.provider === 'gamma')).to.deep.include({ overall_uptime: null, avg_response_time_ms: null, error_message: null });
    });

    it('provider summary across gateways; 404 material for an unknown provider', async () => {
      const a = await health.providerSummary('alpha');
      // 5 healthy, 2 degraded: 2/7 > 25 % → degraded; 25 calls, 23 ok; latest failure is a5's (2 min ago)
      expect(a).to.deep.include({ provider: 'alpha', gateway: 'all', status: 'degraded', total_models: 7, healthy_models: 5,
        degraded_models: 2, unhealthy_models: 0, total_calls: 25, success_rate: 0.92, error_message: 'boom 9', last_checked: iso(NOW - MIN) });
      expect(await health.providerSummary('delta')).to.deep.include({ gateway: 'g1', total_calls: 2, success_rate: 0.5 });
      expect(await health.providerSummary('nobody')).to.equal(undefined);
    });

    it('health summary: system status from provider statuses, model counts, monitoring flag', async () => {
      const s = await health.summary();
      expect(s.system).to.deep.include({
        overall_status: 'degraded', total_providers: 5, healthy_providers: 1, degraded_providers: 2, unhealthy_providers: 1,
        total_models: 12, healthy_models: 6, degraded_models: 2, unhealthy_models: 2, last_updated: iso(NOW),
      });
      expect(s.models).to.have.length(12);
      expect(s.providers).to.have.length(5);
      expect(s.monitoring_active).to.equal(true);
      expect(s.last_check).to.equal(iso(NOW - MIN));
    });

    it('the chosen gateway of a model: most calls in 24 h, then the latest call', async () => {
      const d = await health.detail('alpha', 'a1');
      expect(d!.model.gateway).to.equal('g2'); // one call on each; g2's is later
      expect(d!.gateways.map((g) => g.gateway)).to.deep.equal(['g1', 'g2']);
    });

    /** Runs `body` with the health service started on a recorder; `write` records calls and waits for what follows a flush. */
    async function throughRecorder(body: (write: (obs: HealthObservation[]) => Promise<void>) => Promise<void>) {
      const recorder = new Recorder(store, createLogger('silent'), 60_000);
      health.start(recorder, 3_600_000);
      try {
        await body(async (obs) => {
          for (const o of obs) recorder.recordHealth(o);
          await recorder.flush();
          await health.settled();
        });
      } finally {
        await health.stop();
        await recorder.stop();
      }
    }

    it('incidents open when a model turns unhealthy and resolve when it recovers (through the recorder)', () => throughRecorder(async (write) => {
      await write(calls('gw', 'p', 'p/flaky', '000', { endAgo: 30 * MIN }));
      let d = await health.detail('p', 'flaky');
      expect(d!.incidents).to.deep.equal([{ id: d!.incidents[0].id, started_at: iso(NOW - 30 * MIN), resolved_at: null, status: 'ongoing', error_message: 'boom 2' }]);
      await write(calls('gw', 'p', 'p/flaky', seq('1', 20), { endAgo: 10 * MIN })); // 20 of 23 → degraded
      d = await health.detail('p', 'flaky');
      expect(d!.model.status).to.equal('degraded');
      expect(d!.incidents[0]).to.deep.include({ resolved_at: iso(NOW - 10 * MIN), status: 'resolved' });
      await write(calls('gw', 'p', 'p/flaky', '000', { endAgo: 2 * MIN }));
      d = await health.detail('p', 'flaky');
      expect(d!.incidents.map((i) => [i.status, i.started_at])).to.deep.equal([['ongoing', iso(NOW - 2 * MIN)], ['resolved', iso(NOW - 30 * MIN)]]);
      await health.incidents.reconcile(); // a sweep with nothing changed keeps one open incident
      expect((await health.detail('p', 'flaky'))!.incidents.filter((i) => i.status === 'ongoing')).to.have.length(1);
    }));

    it('only a failed call opens an incident: successes after calls that left a model unhealthy open none (through the recorder)', async () => {
      // written straight to the store, as another instance would: no evaluation follows them here
      await store.health.record(calls('gw', 'p', 'p/stale', seq('0', 6, '1', 2), { endAgo: 20 * MIN }));
      await throughRecorder(async (write) => {
        await write(calls('gw', 'p', 'p/stale', '1', { endAgo: 10 * MIN })); // 3 of 9 ok: still unhealthy
        let d = await health.detail('p', 'stale');
        expect(d!.model.status).to.equal('unhealthy');
        expect(d!.incidents).to.deep.equal([]);
        await write(calls('gw', 'p', 'p/stale', '0', { endAgo: 5 * MIN }));
        d = await health.detail('p', 'stale');
        expect(d!.incidents).to.deep.equal([{ id: d!.incidents[0].id, started_at: iso(NOW - 5 * MIN), resolved_at: null, status: 'ongoing', error_message: 'boom 0' }]);
        // successes resolve the open incident (it is evaluated after every batch while it is open)
        await write(calls('gw', 'p', 'p/stale', seq('1', 40), { endAgo: 2 * MIN, stepMs: 1000 }));
        d = await health.detail('p', 'stale');
        expect(d!.model.status).to.not.equal('unhealthy');
        expect(d!.incidents[0]).to.deep.include({ resolved_at: iso(NOW - 2 * MIN), status: 'resolved' });
      });
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`health retention on ${dialect}: old history and buckets pruned, each model's last 100 calls kept`, function () {
    let store: Store;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      store = await openStore(configFor(dialect));
    });
    after(async () => { await store?.close(); });

    const history = async (model: string) => (await store.db.selectFrom('model_health_history').select(['ts', 'id'])
      .where('model', '=', model).orderBy('ts').orderBy('id').execute()).map((r) => [Number(r.ts), Number(r.id)]);
    const buckets = async (model: string) => (await store.db.selectFrom('model_health_buckets').select('bucket')
      .where('model', '=', model).orderBy('bucket').execute()).map((r) => Number(r.bucket));
    const series = (model: string, start: number, n: number, step = MIN) => Array.from({ length: n }, (_, i) => at(start + i * step, true, model));

    it('prune: history older than the cut-off goes except each model\'s last 100 calls; buckets older than theirs go; in chunks', async () => {
      const cut = NOW - 7 * DAY;
      const busy = series('p/busy', cut - 120 * MIN, 150); // 120 before the cut-off: the 50 oldest go, the last 100 stay
      const quiet = series('p/quiet', NOW - 40 * DAY, 30); // all old, but fewer than 100: all stay
      const fresh = series('p/fresh', NOW - DAY, 120); // more than 100, none old: all stay
      const tie = series('p/tie', NOW - 10 * DAY, 110, 0); // one timestamp: the 10 lowest ids go
      await store.health.record([...busy, ...quiet, ...fresh, ...tie]);
      const before = { busy: await history('p/busy'), tie: await history('p/tie'), quietBuckets: await buckets('p/quiet'), busyBuckets: await buckets('p/busy') };
      // 30 minutes of 5-minute buckets, 40 days ago (NOW is not on a bucket's edge: 7 of them)
      expect(before.quietBuckets).to.deep.equal([...new Set(quiet.map((o) => o.ts - (o.ts % 300_000)))]).and.to.have.length(7);

      expect(await pruneHealth(store.db, cut, NOW - 31 * DAY, 100, 7)).to.deep.equal({ history: 60, buckets: 7 });
      expect(await history('p/busy')).to.deep.equal(before.busy.slice(50));
      expect((await history('p/quiet')).map(([ts]) => ts)).to.deep.equal(quiet.map((o) => o.ts));
      expect(await history('p/fresh')).to.have.length(120);
      expect(await history('p/tie')).to.deep.equal(before.tie.slice(10));
      expect(await buckets('p/quiet')).to.deep.equal([]);
      expect(await buckets('p/busy')).to.deep.equal(before.busyBuckets);
      // a prune told to stop (the gateway is stopping) deletes no further chunk
      await store.health.record(series('p/stop', NOW - 20 * DAY, 130));
      expect(await pruneHealth(store.db, cut, NOW - 31 * DAY, 100, 7, () => true)).to.deep.equal({ history: 0, buckets: 0 });
      expect(await history('p/stop')).to.have.length(130);
      expect(await pruneHealth(store.db, cut, NOW - 31 * DAY, 100, 7)).to.deep.equal({ history: 30, buckets: 0 });
      expect(await history('p/stop')).to.have.length(100);
      // nothing more to do; the model's detail still shows its last 100 calls
      expect(await pruneHealth(store.db, cut, NOW - 31 * DAY, 100, 7)).to.deep.equal({ history: 0, buckets: 0 });
      const detail = await new HealthService(store.db, () => false, () => NOW).detail('p', 'busy');
      expect(detail!.history).to.have.length(100);
      expect(detail!.history.at(-1)!.timestamp).to.equal(iso(busy[50].ts));
    });

    it('the health sweep prunes once an hour with HEALTH_HISTORY_DAYS; 0 keeps everything', async () => {
      await store.health.record(series('p/swept', NOW - 30 * DAY, 105));
      // sweeps every 10 ms until `done` (at most 5 s: a prune stopped half-way by stop() would leave rows behind)
      const run = async (historyDays: number, done: () => Promise<boolean>) => {
        const health = new HealthService(store.db, () => false, () => NOW);
        const recorder = new Recorder(store, createLogger('silent'), 60_000);
        health.start(recorder, 10, historyDays);
        const until = Date.now() + 5000;
        do await new Promise((r) => setTimeout(r, 20)); while (!(await done()) && Date.now() < until);
        await health.stop();
        await recorder.stop();
      };
      let waited = 0;
      await run(0, async () => ++waited >= 5); // ~100 ms of sweeps
      expect(await history('p/swept')).to.have.length(105);
      await run(7, async () => (await history('p/swept')).length <= 100);
      expect(await history('p/swept')).to.have.length(100);
    });
  });
}
