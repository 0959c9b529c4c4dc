import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { Recorder } from '../../src/engine/recorder.js';
import { createLogger } from '../../src/logger.js';
import type { Store } from '../../src/store/index.js';
import type { UsageRecord } from '../../src/store/usage.js';
import type { HealthObservation } from '../../src/store/health.js';
import { startTestGateway } from '../support/app.js';

/**
 * The recorder's timer (src/engine/recorder.ts): armed only while records wait. The store is a stand-in that keeps
 * what it was given (the real writes are tested in store.test.ts); timers made inside a synchronous window are seen by
 * wrapping setTimeout and setInterval for that window only.
 */
describe('Recorder: a flush intervalMs after the first waiting record, no timer while nothing waits', () => {
  const usage = (id: string): UsageRecord => ({ request_id: id, user_id: 1, key_id: 1, endpoint: 'chat', gateway: 'g', provider: 'p', model: 'm',
    status: 'success', error_class: null, http_status: 200, prompt_tokens: 1, completion_tokens: 1, cached_tokens: 0, cost_nano: 1, latency_ms: 1,
    ttft_ms: null, created_at: 1 });
  const health: HealthObservation = { gateway: 'g', model: 'm', provider: 'p', ok: true, status: 'success', latencyMs: 1, error: null, ts: 1, source: 'passive' };

  function fakeStore(failures = 0) {
    const written = { usage: [] as string[][], health: [] as number[], attempts: 0 };
    const store = {
      usage: {
        async insertMany(rows: UsageRecord[]) {
          written.attempts++;
          if (failures-- > 0) throw new Error('database away');
          written.usage.push(rows.map((r) => r.request_id));
        },
      },
      health: { async record(rows: HealthObservation[]) { written.health.push(rows.length); } },
    } as unknown as Store;
    return { store, written };
  }

  /** The timers `fn` makes (synchronously): 'timeout <ms>' or 'interval <ms>'. */
  function timersMadeBy(fn: () => void): string[] {
    const made: string[] = [];
    const { setTimeout: t, setInterval: i } = globalThis;
    globalThis.setTimeout = ((cb: (...a: unknown[]) => void, ms?: number, ...rest: unknown[]) => { made.push(`timeout ${ms}`); return t(cb, ms, ...rest); }) as typeof setTimeout;
    globalThis.setInterval = ((cb: (...a: unknown[]) => void, ms?: number, ...rest: unknown[]) => { made.push(`interval ${ms}`); return i(cb, ms, ...rest); }) as typeof setInterval;
    try {
      fn();
    } finally {
      globalThis.setTimeout = t;
      globalThis.setInterval = i;
    }
    return made;
  }

  it('started with nothing waiting it arms no timer; the first record arms one, the flush writes everything waiting', async () => {
    const { store, written } = fakeStore();
    const recorder = new Recorder(store, createLogger('silent'), 30);
    expect(timersMadeBy(() => recorder.start())).to.deep.equal([]);
    expect(timersMadeBy(() => {
      recorder.recordUsage(usage('a'));
      recorder.recordHealth(health);
      recorder.recordUsage(usage('b'));
    })).to.deep.equal(['timeout 30']);
    expect(written.usage).to.deep.equal([]);
    await sleep(80);
    expect(written).to.deep.equal({ usage: [['a', 'b']], health: [1], attempts: 1 });
    expect(recorder.pending).to.equal(0);
    // flushed: the next record arms a new timer (none was left armed)
    expect(timersMadeBy(() => recorder.recordUsage(usage('c')))).to.deep.equal(['timeout 30']);
    await recorder.stop();
    expect(written.usage).to.deep.equal([['a', 'b'], ['c']]);
  });

  it('a failed flush keeps its records and arms the next attempt', async () => {
    const { store, written } = fakeStore(1);
    const recorder = new Recorder(store, createLogger('silent'), 20);
    recorder.start();
    recorder.recordUsage(usage('x'));
    await sleep(35);
    expect(written.attempts).to.equal(1);
    expect(recorder.pending).to.equal(1);
    await sleep(60);
    expect(written).to.deep.equal({ usage: [['x']], health: [], attempts: 2 });
    await recorder.stop();
  });

  it('stop() writes what waits and arms nothing after; records made before start() wait for it', async () => {
    const { store, written } = fakeStore();
    const recorder = new Recorder(store, createLogger('silent'), 10_000);
    expect(timersMadeBy(() => recorder.recordUsage(usage('early')))).to.deep.equal([]);
    expect(timersMadeBy(() => recorder.start())).to.deep.equal(['timeout 10000']);
    await recorder.stop();
    expect(written.usage).to.deep.equal([['early']]);
    expect(timersMadeBy(() => recorder.recordUsage(usage('late')))).to.deep.equal([]);
    expect(recorder.pending).to.equal(1);
  });

  it("the gateway's recorder waits RECORDS_FLUSH_MS (250 by default) after the first record before it writes", async () => {
    // (no health monitor: its probes would record, and arm the timer, first)
    for (const [env, ms] of [[{ HEALTH_MONITOR: 'off' }, 250], [{ HEALTH_MONITOR: 'off', RECORDS_FLUSH_MS: '40' }, 40]] as const) {
      const gw = await startTestGateway({ env });
      try {
        const { recorder } = gw.services;
        expect(timersMadeBy(() => recorder.recordUsage(usage(`r${ms}`)))).to.deep.equal([`timeout ${ms}`]);
        if (ms === 40) {
          // written by that timer: the row is in the store once it fired
          await sleep(120);
          expect(recorder.pending).to.equal(0);
          expect((await gw.store.usage.byRequestId('r40')).map((r) => r.request_id)).to.deep.equal(['r40']);
        }
      } finally {
        await gw.close();
      }
    }
  });
});
