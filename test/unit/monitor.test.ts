import { expect } from 'chai';
import { openStore, type Store } from '../../src/store/index.js';
import { HealthService } from '../../src/health/service.js';
import { HealthMonitor, type ProbeTarget } from '../../src/health/monitor.js';
import { Recorder } from '../../src/engine/recorder.js';
import { createLogger } from '../../src/logger.js';
import { loadConfig } from '../../src/config.js';
import { configFor, postgresAvailable, DIALECTS } from '../support/db.js';
import { startTestGateway } from '../support/app.js';
import { calls, seq, NOW, MIN, DAY } from '../support/traffic.js';

const logger = createLogger('silent');
const intervals = { hot: 5 * MIN, warm: 30 * MIN, cold: 6 * 60 * MIN, failing: MIN };

for (const dialect of DIALECTS) {
  describe(`health monitor on ${dialect}: schedule by tier, global budget, probes recorded as health only`, function () {
    let store: Store;
    let recorder: Recorder;
    let health: HealthService;
    let now = NOW;
    const probed: string[] = [];
    const targets: ProbeTarget[] = ['hot-fresh', 'hot-stale', 'warm-fresh', 'warm-stale', 'failing', 'failing-fresh', 'cold', 'new']
      .map((m) => ({ gateway: 'gw', model: `p/${m}`, provider: 'p' }));
    const monitor = (budgetPerMinute: number, probe = async (_g: string, model: string) => {
      probed.push(model);
      return model === 'p/failing' ? { ok: false, status: 'error', latencyMs: 40, error: 'still down' } : { ok: true, status: 'success', latencyMs: 25, error: null };
    }) => new HealthMonitor({
      config: { mode: 'on', budgetPerMinute, intervalsMs: intervals, concurrency: 8, tickMs: 1000 }, enabled: true,
      probe, targets: () => targets, records: async () => (await health.records()).rows, recorder, logger, clock: () => now,
    });

    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      store = await openStore(configFor(dialect));
      recorder = new Recorder(store, logger, 60_000);
      health = new HealthService(store.db, () => true, () => now);
      const c = (m: string, outcomes: string, endAgo: number) => calls('gw', 'p', `p/${m}`, outcomes, { endAgo });
      await store.health.record([
        ...c('hot-fresh', seq('1', 100), MIN), ...c('hot-stale', seq('1', 100), 6 * MIN),
        ...c('warm-fresh', '1', 20 * MIN), ...c('warm-stale', '1', 31 * MIN),
        ...c('failing', '0', 2 * MIN), ...c('failing-fresh', '0', 30_000), ...c('cold', '1', 8 * DAY),
      ]);
    });
    after(async () => { await recorder?.stop(); await store?.close(); });

    it('plans the due targets: failing first, then hot, warm, cold; most overdue first; fresh ones wait', async () => {
      const plan = await monitor(10).plan(NOW);
      expect(plan.map((p) => [p.model, p.tier, p.failing])).to.deep.equal([
        ['p/failing', 'warm', true], ['p/hot-stale', 'hot', false], ['p/warm-stale', 'warm', false],
        ['p/new', 'cold', false], ['p/cold', 'cold', false],
      ]);
    });

    it('spends at most the budget, refills it over time, and records results as probes through the recorder', async () => {
      const m = monitor(3); // 3 a minute: one every 20 s
      expect(await m.tick()).to.equal(3);
      expect(probed.splice(0)).to.deep.equal(['p/failing', 'p/hot-stale', 'p/warm-stale']);
      expect(await m.tick()).to.equal(0); // budget spent
      now = NOW + 20_000;
      expect(await m.tick()).to.equal(1);
      expect(probed.splice(0)).to.deep.equal(['p/new']);
      await recorder.flush();
      now = NOW + 80_000; // failing (probed at +0) and failing-fresh (failed at −30 s) are due after 60 s; budget 3 again
      expect(await m.tick()).to.equal(3);
      expect(probed.splice(0)).to.deep.equal(['p/failing-fresh', 'p/failing', 'p/cold']); // most overdue first
      await recorder.flush();
      const hist = await store.db.selectFrom('model_health_history').selectAll().where('source', '=', 'probe').orderBy('ts').orderBy('model').execute();
      expect(hist.map((h) => [h.model, h.status, Number(h.ts) - NOW])).to.deep.equal([
        ['p/failing', 'error', 0], ['p/hot-stale', 'success', 0], ['p/warm-stale', 'success', 0],
        ['p/new', 'success', 20_000], ['p/cold', 'success', 80_000], ['p/failing', 'error', 80_000], ['p/failing-fresh', 'success', 80_000],
      ]);
      expect(await store.usage.count()).to.equal(0); // probes are never usage
      const rec = (await health.records()).rows.find((r) => r.model === 'p/failing')!;
      expect([rec.last_error, rec.last_latency_ms]).to.deep.equal(['still down', 40]);
    });

    it('a probe that cannot run records nothing', async () => {
      now = NOW + 10 * DAY; // everything due
      const before = await store.db.selectFrom('model_health_history').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
      const m = monitor(100, async () => { throw new Error('no key'); });
      expect(await m.tick()).to.equal(8);
      await recorder.flush();
      const after = await store.db.selectFrom('model_health_history').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
      expect(Number(after.n)).to.equal(Number(before.n));
    });
  });
}

describe('health monitor switch: on by default only with a gateway key, HEALTH_MONITOR=off wins', () => {
  it('parses HEALTH_MONITOR and the probe settings, refusing bad values', () => {
    const base = { DATA_DIR: '/tmp/gw-monitor-cfg', KEY_HASH_SECRET: 'x'.repeat(20) };
    expect(loadConfig(base).health).to.deep.include({ mode: 'auto', budgetPerMinute: 30, concurrency: 4 });
    expect(loadConfig({ ...base, HEALTH_MONITOR: 'off', HEALTH_PROBE_BUDGET: '5', HEALTH_PROBE_HOT_S: '60' }).health)
      .to.deep.include({ mode: 'off', budgetPerMinute: 5 });
    expect(loadConfig({ ...base, HEALTH_PROBE_HOT_S: '60' }).health.intervalsMs.hot).to.equal(60_000);
    expect(() => loadConfig({ ...base, HEALTH_MONITOR: 'sometimes' })).to.throw(/HEALTH_MONITOR/);
    expect(() => loadConfig({ ...base, HEALTH_PROBE_BUDGET: '0' })).to.throw(/HEALTH_PROBE_BUDGET/);
    // the health history's retention
    expect(loadConfig(base).healthHistoryDays).to.equal(7);
    expect(loadConfig({ ...base, HEALTH_HISTORY_DAYS: '0' }).healthHistoryDays).to.equal(0);
    expect(() => loadConfig({ ...base, HEALTH_HISTORY_DAYS: '-1' })).to.throw(/HEALTH_HISTORY_DAYS/);
  });

  for (const [env, active] of [
    [{}, false],
    [{ OPENAI_API_KEY: 'sk-test' }, true],
    [{ OPENAI_API_KEY: 'sk-test', HEALTH_MONITOR: 'off' }, false],
    [{ HEALTH_MONITOR: 'on' }, true],
  ] as Array<[Record<string, string>, boolean]>) {
    it(`${JSON.stringify(env)} → monitoring ${active ? 'on' : 'off'}`, async () => {
      const gw = await startTestGateway({ env });
      try {
        expect(gw.services.monitor.active).to.equal(active);
        expect((await gw.services.health.summary()).monitoring_active).to.equal(active);
      } finally {
        await gw.close();
      }
    });
  }
});
