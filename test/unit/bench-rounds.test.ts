/**
 * `npm run bench:rounds -- --trace`'s reading of V8's trace (bench/rounds.ts): what V8 did in each of the gateway's
 * measures, cut at the tool's marks, with the main thread's collection pauses read off `--trace-gc` lines. A real
 * Node process's `--trace-gc` output is read too, so a line format changed by a Node upgrade fails here rather than
 * counting nothing.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { gcPauseMs, v8ByMeasure } from '../../bench/rounds.js';

describe('bench:rounds --trace', () => {
  it('counts compilations, deoptimisations, collections and the collections’ pauses per measure', () => {
    const trace = [
      '[marking 0x1 <JSFunction a> for optimization to TURBOFAN, ConcurrencyMode::kConcurrent, reason: hot and stable]',
      '[completed compiling 0x1 <JSFunction a> (target TURBOFAN) - took 0.1, 2.0, 0.1 ms]',
      '[1:0x1]     1000 ms: Scavenge 20.0 (30.0) -> 10.0 (31.0) MB, 1.50 / 0.00 ms  (average mu = 1.000, current mu = 1.000) allocation failure; ',
      '#### start round 1 burst',
      '[1:0x1]     2000 ms: Scavenge 22.0 (32.0) -> 11.0 (32.0) MB, 2.25 / 0.01 ms  (average mu = 0.990, current mu = 0.990) task; ',
      '[1:0x1]     2100 ms: Scavenge 23.0 (32.0) -> 12.0 (32.0) MB, 0.75 / 0.00 ms  (average mu = 0.990, current mu = 0.990) task; ',
      '[marking dependent code 0x2 <Code TURBOFAN> (opt id 3) for deoptimization, reason: code dependencies]',
      '[marking dependent code 0x3 <Code TURBOFAN> (opt id 4) for deoptimization, reason: weak objects]',
      '[1:0x1]     2500 ms: Mark-Compact 63.0 (95.8) -> 34.2 (92.0) MB, 10.42 / 0.01 ms  (+ 10.8 ms in 37 steps since start of marking, biggest step 8.2 ms, walltime since start of marking 42 ms) (average mu = 0.998, current mu = 0.999) finalize incremental marking via task; GC in old space requested',
      '#### end round 1 burst',
      '[1:0x1]     9000 ms: Mark-Compact (reduce) 59.9 (62.0) -> 32.1 (54.5) MB, 22.67 / 0.02 ms  (average mu = 1.000, current mu = 1.000) low memory notification; GC in old space requested',
      '#### start round 1 together',
      '#### end round 1 together',
    ];
    const v8 = v8ByMeasure(trace);
    expect([...v8.keys()]).to.deep.equal(['round 1 burst', 'round 1 together']);
    const burst = v8.get('round 1 burst')!;
    expect(burst.before).to.deep.equal({ compiled: 1, weak: 0, deopts: 0, mc: 0, reducing: 0, scavenges: 1, scavengeMs: 1.5, mcMs: 0 });
    expect(burst.during.scavenges).to.equal(2);
    expect(burst.during.scavengeMs).to.be.closeTo(3, 1e-9);
    expect(burst.during.mc).to.equal(1);
    expect(burst.during.mcMs).to.be.closeTo(21.22, 1e-9); // the pause and the incremental steps before it
    expect(burst.during).to.include({ compiled: 0, deopts: 2, weak: 1, reducing: 0 });
    const together = v8.get('round 1 together')!;
    expect(together.before).to.include({ reducing: 1, mc: 0, scavenges: 0 });
    expect(together.before.mcMs).to.be.closeTo(22.67, 1e-9);
    expect(together.during).to.include({ compiled: 0, scavenges: 0, mc: 0, reducing: 0, mcMs: 0, scavengeMs: 0 });
  });

  it('reads the pauses off the --trace-gc lines of this Node', () => {
    // Young objects kept long enough to be copied, then a full collection asked for.
    const script = 'const keep = []; for (let i = 0; i < 3e5; i++) { keep.push({ i, s: "x" + i }); if (keep.length > 5e4) keep.length = 0; } globalThis.gc();';
    const run = spawnSync(process.execPath, ['--trace-gc', '--expose-gc', '--max-semi-space-size=1', '-e', script], { encoding: 'utf8' });
    expect(run.status).to.equal(0);
    const lines = run.stdout.split('\n');
    const scavenges = lines.filter((l) => /ms: Scavenge/.test(l));
    const compacts = lines.filter((l) => /ms: Mark-Compact/.test(l));
    expect(scavenges.length).to.be.greaterThan(0);
    expect(compacts.length).to.be.greaterThan(0);
    // Every line has its pause where the tool reads it; the full collection took some time.
    for (const l of [...scavenges, ...compacts]) expect(l).to.match(/, [\d.]+ \/ [\d.]+ ms/);
    expect(compacts.map(gcPauseMs).reduce((a, b) => a + b, 0)).to.be.greaterThan(0);
    const v8 = v8ByMeasure(['#### start all', ...lines, '#### end all']).get('all')!.during;
    expect(v8.scavenges).to.equal(scavenges.length);
    expect(v8.mc + v8.reducing).to.equal(compacts.length);
  });
});
