import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { MemoryTrimmer, loadReduce, loadTrim, type MemoryReading } from '../../src/memory.js';
import fs from 'node:fs';
import os from 'node:os';
import request from 'supertest';
import { startTestGateway, type TestGateway } from '../support/app.js';

const MB = 2 ** 20;
const glibc = !!(process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;

describe('unit: memory trim (src/memory.ts, native/malloc-trim)', () => {
  /**
   * A trimmer over fake readings and a fake clock: `mem` is what the next read returns; trim() lowers the RSS by
   * `gives`; reduce() (V8's collection, when `reduceGives` is given) by `reduceGives`; `clock.ms` is the time.
   */
  function fixture(start: MemoryReading, gives = 0, reduceGives?: number, reduceAfterMs = 30_000, reduceMaxMs?: number) {
    const mem = { ...start };
    const inflight = { busy: 0, started: 0 };
    const clock = { ms: 1_000 };
    const logs: unknown[] = [];
    let calls = 0;
    let reduceCalls = 0;
    const trim = () => { calls++; mem.rss -= gives; return gives > 0; };
    const reduce = reduceGives === undefined ? null : () => { reduceCalls++; mem.rss -= reduceGives; };
    const t = new MemoryTrimmer(inflight, { debug: (o: unknown) => void logs.push(o) },
      { intervalMs: 60_000, reduceAfterMs, reduceMaxMs, trim, reduce, read: () => ({ ...mem }), now: () => clock.ms });
    expect(t.start()).to.equal(true);
    t.stop();
    return { t, mem, inflight, clock, logs, calls: () => calls, reduceCalls: () => reduceCalls };
  }

  it('trims once the RSS grew by 16 MB and nothing is in flight, and not again until there is more to give back', () => {
    const f = fixture({ rss: 100 * MB, external: 2 * MB }, 80 * MB);
    f.mem.rss = 115 * MB;
    expect(f.t.tick()).to.equal(false); // grew 15 MB: under the threshold
    f.mem.rss = 240 * MB;
    f.inflight.busy = 2;
    expect(f.t.tick()).to.equal(false); // requests in flight: never while serving
    f.inflight.busy = 0;
    expect(f.t.tick()).to.equal('trimmed');
    expect(f.calls()).to.equal(1);
    expect(f.mem.rss).to.equal(160 * MB);
    expect(f.t.released).to.equal(80 * MB);
    expect(f.t.tick()).to.equal(false); // nothing new since
    expect(f.calls()).to.equal(1);
    expect(f.logs).to.deep.include.members([{ ms: (f.logs[0] as { ms: number }).ms, rssBefore: 240 * MB, rssAfter: 160 * MB }]);
  });

  it('trims again when Buffers were freed after the last trim (the collector ran later than the trim)', () => {
    const f = fixture({ rss: 100 * MB, external: 2 * MB }, 60 * MB);
    f.mem.rss = 300 * MB;
    f.mem.external = 70 * MB; // the load's Buffers, dead but not yet collected
    expect(f.t.tick()).to.equal('trimmed');
    expect(f.mem.rss).to.equal(240 * MB);
    f.mem.external = 60 * MB; // 10 MB freed: not yet worth it
    expect(f.t.tick()).to.equal(false);
    f.mem.external = 3 * MB; // collected: 67 MB back in glibc's heap, still resident
    expect(f.t.tick()).to.equal('trimmed');
    expect(f.calls()).to.equal(2);
    expect(f.mem.rss).to.equal(180 * MB);
  });

  it("reduces V8's heap, then trims, once nothing has been served for MEMORY_REDUCE_AFTER_MS: at start-up's end and once per quiet spell", () => {
    const f = fixture({ rss: 150 * MB, external: 2 * MB }, 5 * MB, 40 * MB);
    f.clock.ms += 29_999;
    expect(f.t.tick()).to.equal(false); // start-up's garbage: not yet 30 s without a request
    f.clock.ms += 1;
    expect(f.t.tick()).to.equal('reduced');
    expect([f.reduceCalls(), f.calls()]).to.deep.equal([1, 1]); // the collection, then the C allocator's trim
    expect(f.mem.rss).to.equal(105 * MB);
    expect([f.t.reductions, f.t.reducedBytes, f.t.trims]).to.deep.equal([1, 45 * MB, 0]);
    expect(f.logs).to.deep.equal([{ ms: (f.logs[0] as { ms: number }).ms, rssBefore: 150 * MB, rssAfter: 105 * MB }]);
    f.clock.ms += 120_000;
    expect(f.t.tick()).to.equal(false); // still quiet: nothing new to give back, no second collection
    expect(f.reduceCalls()).to.equal(1);

    // a request in flight at a tick, then none: the quiet spell counts from the tick that saw it
    f.inflight.busy = 1;
    f.inflight.started = 1;
    expect(f.t.tick()).to.equal(false);
    f.inflight.busy = 0;
    f.clock.ms += 29_000;
    expect(f.t.tick()).to.equal(false);
    // requests started and ended between two ticks count as served too
    f.inflight.started = 40;
    f.clock.ms += 5_000;
    expect(f.t.tick()).to.equal(false);
    f.clock.ms += 29_999;
    expect(f.t.tick()).to.equal(false);
    f.clock.ms += 1;
    expect(f.t.tick()).to.equal('reduced');
    expect([f.reduceCalls(), f.t.reductions]).to.deep.equal([2, 2]);
  });

  it('the quiet spell doubles while traffic comes back sooner after a reduction than the spell it waited, up to MEMORY_REDUCE_MAX_MS; traffic that comes back later sets it back', () => {
    const f = fixture({ rss: 150 * MB, external: 2 * MB }, 0, 10 * MB, 30_000, 120_000);
    const served = () => { f.inflight.started++; };
    f.clock.ms += 30_000;
    expect(f.t.tick()).to.equal('reduced'); // start-up's end
    expect(f.t.quietSpellMs).to.equal(30_000);
    // a client back 10 s after it (a pause of 40 s): the next pause must be 60 s long to be reduced
    f.clock.ms += 10_000;
    served();
    expect(f.t.tick()).to.equal(false);
    expect(f.t.quietSpellMs).to.equal(60_000);
    expect(f.logs.at(-1)).to.deep.equal({ heldMs: 10_000, quietSpellMs: 60_000 });
    f.clock.ms += 40_000;
    expect(f.t.tick()).to.equal(false); // the same 40 s pause again: the compiled code is kept
    served();
    f.clock.ms += 1_000;
    expect(f.t.tick()).to.equal(false);
    expect([f.reduceCalls(), f.t.quietSpellMs]).to.deep.equal([1, 60_000]); // no reduction, nothing to learn from
    f.clock.ms += 59_999;
    expect(f.t.tick()).to.equal(false);
    f.clock.ms += 1;
    expect(f.t.tick()).to.equal('reduced');
    f.clock.ms += 59_000; // back before another 60 s: 120 s
    served();
    expect(f.t.tick()).to.equal(false);
    expect(f.t.quietSpellMs).to.equal(120_000);
    f.clock.ms += 120_000;
    expect(f.t.tick()).to.equal('reduced');
    f.clock.ms += 5_000; // back soon again: 240 s would be past MEMORY_REDUCE_MAX_MS
    served();
    expect(f.t.tick()).to.equal(false);
    expect(f.t.quietSpellMs).to.equal(120_000);
    f.clock.ms += 120_000;
    expect(f.t.tick()).to.equal('reduced');
    expect(f.reduceCalls()).to.equal(4);
    // the traffic stopped for longer than the spell after that reduction: a pause that paid for it, back to 30 s
    f.clock.ms += 600_000;
    served();
    expect(f.t.tick()).to.equal(false);
    expect(f.t.quietSpellMs).to.equal(30_000);
    expect(f.logs.at(-1)).to.deep.equal({ heldMs: 600_000, quietSpellMs: 30_000 });
    f.clock.ms += 30_000;
    expect(f.t.tick()).to.equal('reduced');
    expect(f.reduceCalls()).to.equal(5);
  });

  it('MEMORY_REDUCE_MAX_MS equal to MEMORY_REDUCE_AFTER_MS: every pause of the spell reduces, the spell never grows', () => {
    const f = fixture({ rss: 150 * MB, external: 2 * MB }, 0, 10 * MB, 30_000, 30_000);
    for (let i = 1; i <= 3; i++) {
      f.clock.ms += 30_000;
      expect(f.t.tick()).to.equal('reduced');
      f.clock.ms += 5_000;
      f.inflight.started++;
      expect(f.t.tick()).to.equal(false);
      expect([f.reduceCalls(), f.t.quietSpellMs]).to.deep.equal([i, 30_000]);
    }
  });

  it('the load between two quiet spells is trimmed in its pauses as before, V8 left alone', () => {
    const f = fixture({ rss: 100 * MB, external: 2 * MB }, 60 * MB, 10 * MB);
    f.inflight.started = 500; // served; nothing in flight at this tick
    f.mem.rss = 200 * MB;
    expect(f.t.tick()).to.equal('trimmed');
    expect([f.calls(), f.reduceCalls()]).to.deep.equal([1, 0]);
  });

  it('MEMORY_REDUCE_AFTER_MS=0 never reduces; the trims go on', () => {
    const f = fixture({ rss: 100 * MB, external: 2 * MB }, 60 * MB, 40 * MB, 0);
    expect(f.t.reduces).to.equal(false);
    f.clock.ms += 3_600_000;
    expect(f.t.tick()).to.equal(false);
    f.mem.rss = 200 * MB;
    expect(f.t.tick()).to.equal('trimmed');
    expect(f.reduceCalls()).to.equal(0);
  });

  it('does not start when turned off (MEMORY_TRIM_INTERVAL_MS=0) or with neither call on this system', () => {
    const logs: unknown[] = [];
    const logger = { debug: (o: unknown) => void logs.push(o) };
    const idle = { busy: 0, started: 0 };
    expect(new MemoryTrimmer(idle, logger, { intervalMs: 0, trim: () => true, reduce: () => undefined }).start()).to.equal(false);
    expect(new MemoryTrimmer(idle, logger, { intervalMs: 5000, trim: null, reduce: null }).start()).to.equal(false);
    const reduceOnly = new MemoryTrimmer(idle, logger, { intervalMs: 5000, trim: null, reduce: () => undefined });
    expect(reduceOnly.start()).to.equal(true); // not glibc, but V8's heap is still given back
    reduceOnly.stop();
    expect(reduceOnly.reduces).to.equal(true);
    expect(logs).to.deep.equal([{ available: true, reduce: true, intervalMs: 0 }, { available: false, reduce: false, intervalMs: 5000 }]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-cfg-'));
    expect(loadConfig({ DATA_DIR: dir }).memoryTrimIntervalMs).to.equal(5000);
    expect(loadConfig({ DATA_DIR: dir, MEMORY_TRIM_INTERVAL_MS: '0' }).memoryTrimIntervalMs).to.equal(0);
    expect(() => loadConfig({ DATA_DIR: dir, MEMORY_TRIM_INTERVAL_MS: '-1' })).to.throw(/MEMORY_TRIM_INTERVAL_MS/);
    expect(loadConfig({ DATA_DIR: dir }).memoryReduceAfterMs).to.equal(30_000);
    expect(loadConfig({ DATA_DIR: dir, MEMORY_REDUCE_AFTER_MS: '0' }).memoryReduceAfterMs).to.equal(0);
    expect(() => loadConfig({ DATA_DIR: dir, MEMORY_REDUCE_AFTER_MS: 'soon' })).to.throw(/MEMORY_REDUCE_AFTER_MS/);
    expect(loadConfig({ DATA_DIR: dir }).memoryReduceMaxMs).to.equal(240_000);
    expect(loadConfig({ DATA_DIR: dir, MEMORY_REDUCE_AFTER_MS: '60000' }).memoryReduceMaxMs).to.equal(480_000);
    expect(loadConfig({ DATA_DIR: dir, MEMORY_REDUCE_MAX_MS: '30000' }).memoryReduceMaxMs).to.equal(30_000);
    expect(() => loadConfig({ DATA_DIR: dir, MEMORY_REDUCE_MAX_MS: '20000' })).to.throw(/MEMORY_REDUCE_MAX_MS.*between 30000/);
  });

  it('the timer checks on its own', async () => {
    const mem = { rss: 100 * MB, external: 0 };
    let calls = 0;
    const t = new MemoryTrimmer({ busy: 0, started: 0 }, { debug: () => undefined }, { intervalMs: 10, reduce: null, trim: () => { calls++; mem.rss = 100 * MB; return true; }, read: () => ({ ...mem }) });
    expect(t.start()).to.equal(true);
    mem.rss = 200 * MB;
    for (let i = 0; i < 100 && calls === 0; i++) await new Promise((r) => setTimeout(r, 10));
    t.stop();
    expect(calls).to.equal(1);
  });

  (glibc ? it : it.skip)('the addon is built here (glibc) and gives a fragmented heap back to the system', function () {
    this.timeout(30_000);
    expect(loadTrim()).to.be.a('function');
    // In a child process of its own (so this one's RSS is not involved): 128 MB of 64 KB Buffers (under glibc's mmap
    // threshold, so they come from its heap) with a small Buffer kept after each one, then all the large ones freed.
    const addon = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../native/malloc-trim/index.cjs');
    const script = `
      const trim = require(${JSON.stringify(addon)});
      let big = [], small = [];
      for (let i = 0; i < 2048; i++) { big.push(Buffer.alloc(65536, 1)); small.push(Buffer.allocUnsafeSlow(2048)); }
      big = null; gc(); gc();
      const before = process.memoryUsage.rss();
      const released = trim.trim();
      const after = process.memoryUsage.rss();
      console.log(JSON.stringify({ before, after, released, kept: small.length }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' }));
    expect(out.kept).to.equal(2048);
    expect(out.released).to.equal(true);
    expect(out.before - out.after).to.be.greaterThan(100 * MB);
  });

  it("the addon's V8 call (low_memory) shrinks a heap the process left grown, with V8's own reducer off as npm start runs it", function () {
    this.timeout(30_000);
    expect(loadReduce()).to.be.a('function');
    // In a child process with `--no-memory-reducer` (npm start's flag): 400,000 small objects made and dropped, so the
    // young generation has grown and the old one holds garbage; the call collects and gives the pages back.
    const addon = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../native/malloc-trim/index.cjs');
    const script = `
      const v8 = require('node:v8');
      const { lowMemory } = require(${JSON.stringify(addon)});
      let keep = [];
      for (let i = 0; i < 400000; i++) keep.push({ i, s: 'x' + i });
      keep = null;
      const heap = () => v8.getHeapStatistics().total_heap_size;
      const before = heap();
      lowMemory();
      console.log(JSON.stringify({ before, after: heap() }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--no-memory-reducer', '-e', script], { encoding: 'utf8' }));
    expect(out.before).to.be.greaterThan(30 * MB);
    expect(out.after).to.be.lessThan(out.before / 3);
  });
});

describe('unit: the quiet spell counts the API traffic, not the monitoring probes (src/app.ts, src/reliability/drain.ts)', function () {
  this.timeout(30_000);
  let g: TestGateway;
  before(async () => { g = await startTestGateway(); });
  after(async () => { await g?.close(); });

  it('GET /health and /metrics (and HEAD /health) are served without ending a quiet spell; an API request ends it', async () => {
    const { inflight } = g.services;
    const clock = { ms: 0 };
    let reduced = 0;
    const t = new MemoryTrimmer(inflight, { debug: () => undefined },
      { intervalMs: 60_000, reduceAfterMs: 30_000, trim: null, reduce: () => { reduced++; }, read: () => ({ rss: 0, external: 0 }), now: () => clock.ms });
    expect(t.start()).to.equal(true);
    t.stop();
    const started = inflight.started;
    for (const path of ['/health', '/metrics', '/health']) {
      const res = await request(g.app).get(path);
      expect(res.status, path).to.equal(200);
      clock.ms += 9_000;
      expect(t.tick(), path).to.equal(false);
    }
    await request(g.app).head('/health');
    expect([inflight.started, inflight.busy, inflight.count]).to.deep.equal([started, 0, 0]);
    clock.ms += 3_000; // 30 s of probes only
    expect(t.tick()).to.equal('reduced');
    expect(reduced).to.equal(1);
    // probes after the reduction are not the traffic coming back either: the spell does not grow for them
    for (let i = 0; i < 4; i++) {
      await request(g.app).get('/health');
      clock.ms += 10_000;
      expect(t.tick()).to.equal(false);
    }
    expect(t.quietSpellMs).to.equal(30_000);

    const { key } = await g.newKey(1, 'quiet');
    const models = await request(g.app).get('/v1/models').set('Authorization', `Bearer ${key}`);
    expect(models.status).to.equal(200);
    expect(inflight.started).to.be.greaterThan(started);
    expect([inflight.busy, inflight.count]).to.deep.equal([0, 0]);
    clock.ms += 1_000;
    expect(t.tick()).to.equal(false); // traffic, 41 s after the reduction: the next spell (still 30 s) starts here
    expect(t.quietSpellMs).to.equal(30_000);
    clock.ms += 29_999;
    await request(g.app).get('/health');
    expect(t.tick()).to.equal(false);
    clock.ms += 1;
    expect(t.tick()).to.equal('reduced');
    expect(reduced).to.equal(2);
  });
});
