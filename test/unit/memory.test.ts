import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { MemoryTrimmer, loadTrim, type MemoryReading } from '../../src/memory.js';
import fs from 'node:fs';
import os from 'node:os';

const MB = 2 ** 20;
const glibc = !!(process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;

describe('unit: memory trim (src/memory.ts, native/malloc-trim)', () => {
  /** A trimmer over fake readings: `mem` is what the next read returns; trim() lowers the RSS by `gives`. */
  function fixture(start: MemoryReading, gives = 0) {
    const mem = { ...start };
    const inflight = { count: 0 };
    const logs: unknown[] = [];
    let calls = 0;
    const trim = () => { calls++; mem.rss -= gives; return gives > 0; };
    const t = new MemoryTrimmer(inflight, { debug: (o: unknown) => void logs.push(o) }, { intervalMs: 60_000, trim, read: () => ({ ...mem }) });
    expect(t.start()).to.equal(true);
    t.stop();
    return { t, mem, inflight, logs, trim, calls: () => calls };
  }

  it('trims once the RSS grew by 16 MB and nothing is in flight, and not again until there is more to give back', () => {
    const f = fixture({ rss: 100 * MB, external: 2 * MB }, 80 * MB);
    f.mem.rss = 115 * MB;
    expect(f.t.tick(f.trim)).to.equal(false); // grew 15 MB: under the threshold
    f.mem.rss = 240 * MB;
    f.inflight.count = 2;
    expect(f.t.tick(f.trim)).to.equal(false); // requests in flight: never while serving
    f.inflight.count = 0;
    expect(f.t.tick(f.trim)).to.equal(true);
    expect(f.calls()).to.equal(1);
    expect(f.mem.rss).to.equal(160 * MB);
    expect(f.t.released).to.equal(80 * MB);
    expect(f.t.tick(f.trim)).to.equal(false); // nothing new since
    expect(f.calls()).to.equal(1);
    expect(f.logs).to.deep.include.members([{ ms: (f.logs[0] as { ms: number }).ms, rssBefore: 240 * MB, rssAfter: 160 * MB }]);
  });

  it('trims again when Buffers were freed after the last trim (the collector ran later than the trim)', () => {
    const f = fixture({ rss: 100 * MB, external: 2 * MB }, 60 * MB);
    f.mem.rss = 300 * MB;
    f.mem.external = 70 * MB; // the load's Buffers, dead but not yet collected
    expect(f.t.tick(f.trim)).to.equal(true);
    expect(f.mem.rss).to.equal(240 * MB);
    f.mem.external = 60 * MB; // 10 MB freed: not yet worth it
    expect(f.t.tick(f.trim)).to.equal(false);
    f.mem.external = 3 * MB; // collected: 67 MB back in glibc's heap, still resident
    expect(f.t.tick(f.trim)).to.equal(true);
    expect(f.calls()).to.equal(2);
    expect(f.mem.rss).to.equal(180 * MB);
  });

  it('does not start when turned off (MEMORY_TRIM_INTERVAL_MS=0) or without a trim on this system', () => {
    const logs: unknown[] = [];
    const logger = { debug: (o: unknown) => void logs.push(o) };
    expect(new MemoryTrimmer({ count: 0 }, logger, { intervalMs: 0, trim: () => true }).start()).to.equal(false);
    expect(new MemoryTrimmer({ count: 0 }, logger, { intervalMs: 5000, trim: null }).start()).to.equal(false);
    expect(logs).to.deep.equal([{ available: true, intervalMs: 0 }, { available: false, intervalMs: 5000 }]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-cfg-'));
    expect(loadConfig({ DATA_DIR: dir }).memoryTrimIntervalMs).to.equal(5000);
    expect(loadConfig({ DATA_DIR: dir, MEMORY_TRIM_INTERVAL_MS: '0' }).memoryTrimIntervalMs).to.equal(0);
    expect(() => loadConfig({ DATA_DIR: dir, MEMORY_TRIM_INTERVAL_MS: '-1' })).to.throw(/MEMORY_TRIM_INTERVAL_MS/);
  });

  it('the timer checks on its own', async () => {
    const mem = { rss: 100 * MB, external: 0 };
    let calls = 0;
    const t = new MemoryTrimmer({ count: 0 }, { debug: () => undefined }, { intervalMs: 10, trim: () => { calls++; mem.rss = 100 * MB; return true; }, read: () => ({ ...mem }) });
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
});
