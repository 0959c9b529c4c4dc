/**
 * npm run bench:rounds: the benchmark's rounds in its order against one gateway, round by round, with the serving
 * processes' CPU in the streamed measures split into the main thread's and the other threads' (V8's compilers and
 * garbage collector, the WAL checkpoint's worker), and, with --trace, what V8 did in each of the gateway's measures.
 *
 *   npm run bench:rounds [-- --rounds 4] [--trace] [--no-lead] [--usage]
 *
 * `npm run bench` reports the median of three rounds; this prints every round of the burst and of the 16 paced streams
 * started together (time to first byte and total, CPU a stream by thread) for the simulator alone, the bare proxy and the
 * gateway (SQLite), after the same loads in the same order as the benchmark (c=1 with its three bodies, c=64). Since
 * session 36 each line also has the load generator's and the simulator's CPU a stream and, for the burst, the cycle
 * they make together on the machine's cores (16 streams' CPU of all three processes over the cores: in this closed
 * loop a stream's total is about that, docs/PERFORMANCE.md sessions 4 and 36). `--usage` adds a fourth target to those two
 * measures: the simulator alone asked for `stream_options.include_usage`, as the gateway asks it upstream to bill a
 * stream (the upstream then writes `"usage":null` in every chunk and a usage chunk before `[DONE]`): the simulator's
 * part of what the gateway's streams cost it. With
 * --trace the gateway runs with `--trace-opt --trace-deopt --trace-gc` into a file (its path printed at the end),
 * marked at each of its measures' start and end, and each measure gets counts, during it and since the gateway's
 * measure before it, of V8's compilations, the optimised code marked for deoptimisation (for an object it embedded
 * that died, "weak objects", apart) and the mark-compacts (memory-reducing ones apart) (docs/PERFORMANCE.md, session 35: such a collection while the gateway sits idle between measures discards
 * optimised code that is compiled again in the next ones), and since session 48 the main thread's collection pauses
 * (scavenges; mark-compacts with their incremental steps), during a measure also per stream or request: under a burst
 * the gateway allocates about twice the bare proxy's memory a stream and its scavenges stop it longer (docs/PERFORMANCE.md,
 * session 48). --no-lead runs without the benchmark's warm-up of the
 * streamed paths and its lead-ins (as before session 35). Loopback only; bounded by --rounds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODEL, arg, benchGateway, chatBody, conversationBody, cpuUs, imageBody, isEntryPoint, latencyC1, log, round, startBareProxy, startTs, streamSizes, streamedMeasures, streaming, throughput, warmTarget, withCpu } from './lib.js';

const ROUNDS = Number(arg('--rounds') ?? 4);
const TRACE = process.argv.includes('--trace');
const LEAD = !process.argv.includes('--no-lead');
const USAGE = process.argv.includes('--usage');
const SIZES = streamSizes(false); // the benchmark's (bench/run.ts)
const CORES = os.cpus().length;
const LEADS = SIZES.lead;
/** The streamed measures printed round by round (bench/lib.ts's names), as this tool calls them; the others only run. */
const SHOWN: Record<string, string> = { stream: 'burst', paced: 'together' };

/**
 * What V8 did in the gateway over a stretch of its trace: compilations, code marked for deoptimisation, mark-compacts
 * (memory-reducing ones apart), and the main thread's collection pauses (scavenges, and mark-compacts with their
 * incremental steps, the memory-reducing ones' pauses counted with the others), as `--trace-gc` prints them.
 */
interface V8Counts { compiled: number; weak: number; deopts: number; mc: number; reducing: number; scavenges: number; scavengeMs: number; mcMs: number }
/**
 * The trace cut at the marks `#### start <label>` and `#### end <label>`: per measure, what V8 did during it and
 * since the gateway's measure before it ended (while the other targets were measured, the gateway idle).
 */
export function v8ByMeasure(trace: string[]): Map<string, { before: V8Counts; during: V8Counts }> {
  const out = new Map<string, { before: V8Counts; during: V8Counts }>();
  const zero = (): V8Counts => ({ compiled: 0, weak: 0, deopts: 0, mc: 0, reducing: 0, scavenges: 0, scavengeMs: 0, mcMs: 0 });
  let c = zero();
  let before = zero();
  for (const l of trace) {
    const m = /^#### (start|end) (.+)$/.exec(l);
    if (m) {
      if (m[1] === 'start') before = c;
      else out.set(m[2], { before, during: c });
      c = zero();
    } else if (l.includes('completed compiling')) {
      c.compiled++;
    } else if (l.includes('marking dependent code')) {
      c.deopts++;
      if (l.includes('weak objects')) c.weak++;
    } else if (/ms: Mark-Compact \(reduce\)/.test(l)) {
      c.reducing++;
      c.mcMs += gcPauseMs(l);
    } else if (/ms: Mark-Compact/.test(l)) {
      c.mc++;
      c.mcMs += gcPauseMs(l);
    } else if (/ms: Scavenge/.test(l)) {
      c.scavenges++;
      c.scavengeMs += gcPauseMs(l);
    }
  }
  return out;
}
/**
 * A `--trace-gc` line's pause of the main thread, in ms: `…, 2.04 / 0.00 ms …` (the pause, then the part of it in the
 * embedder's collection callbacks), plus a mark-compact's incremental steps on the main thread before it (`(+ 10.8 ms in 37 steps …`).
 */
export function gcPauseMs(line: string): number {
  const pause = /, ([\d.]+) \/ [\d.]+ ms/.exec(line);
  const steps = /\(\+ ([\d.]+) ms in \d+ steps/.exec(line);
  return (pause ? Number(pause[1]) : 0) + (steps ? Number(steps[1]) : 0);
}

/** `units`: the measure's streams or requests, for the collections' pause per unit (not given for the stretch before it). */
const describe = (c: V8Counts, units?: [number, string]) => `${c.compiled} compiled, ${c.deopts} marked for deoptimisation (${c.weak} for weak objects), ${c.mc} mark-compacts, ${c.reducing} reducing; `
  + `the main thread paused ${round(c.scavengeMs, 1)} ms by ${c.scavenges} scavenge${c.scavenges === 1 ? '' : 's'}, ${round(c.mcMs, 1)} ms by mark-compacts (reducing ones included)`
  + (units && units[0] > 0 ? ` (${round(((c.scavengeMs + c.mcMs) * 1000) / units[0], 1)} µs a ${units[1]})` : '');

async function main() {
  const traceFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gw-rounds-')), 'gateway-trace.log');
  /** The gateway's measures' units (streams or requests), by label: the collections' pause per unit. */
  const units = new Map<string, [number, string]>();
  const mark = (what: 'start' | 'end', label: string, n?: [number, string]) => {
    if (!TRACE) return;
    fs.appendFileSync(traceFile, `#### ${what} ${label}\n`);
    if (n) units.set(label, n);
  };
  const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
  const bare = await startBareProxy(sim.match[1]);
  const gw = await benchGateway('sqlite', {}, sim.match[1], TRACE ? ['--trace-opt', '--trace-deopt', '--trace-gc'] : [], undefined, undefined,
    TRACE ? { wrap: ['sh', '-c', `exec "$@" >> '${traceFile}'`, 'sh'] } : {});
  const simPid = sim.child.pid!;
  const targets: Array<[string, string, string, number]> = [['direct', sim.match[1], 'sim-key', simPid], ['bare', bare.match[1], 'x', bare.child.pid!], ['gateway', gw.url, gw.key, gw.pid]];
  const large = conversationBody(MODEL, false, 100);
  const image = imageBody(MODEL, false);
  log(`warming up${LEAD ? ' (every loaded path)' : ' (c=64 only, as before session 35)'}`);
  for (const [, url, key] of targets) await warmTarget(url, key, false, !LEAD);
  const lines: string[] = [];
  for (let i = 1; i <= ROUNDS; i++) {
    log(`round ${i} of ${ROUNDS}`);
    for (const [, url, key] of targets) await latencyC1(url, key, 1000);
    for (const [, url, key] of targets) await latencyC1(url, key, 300, large);
    for (const [, url, key] of targets) await latencyC1(url, key, 100, image);
    for (const [who, url, key] of targets) {
      if (LEAD) await throughput(url, key, 64, LEADS.c64);
      if (who === 'gateway') mark('start', `round ${i} c64`);
      const t = await throughput(url, key, 64, 5);
      if (who === 'gateway') mark('end', `round ${i} c64`, [t.requests, 'request']);
    }
    for (const m of streamedMeasures(SIZES)) {
      const measure = SHOWN[m.name];
      if (!measure) {
        for (const [, url, key] of targets) {
          if (LEAD) await streaming(url, key, m.concurrency, m.lead, m.model, m.spreadMs);
          await streaming(url, key, m.concurrency, m.total, m.model, m.spreadMs);
        }
        continue;
      }
      for (const [who, url, key, pid] of USAGE ? [targets[0], ['usage', sim.match[1], 'sim-key', simPid] as const, ...targets.slice(1)] : targets) {
        const body = chatBody(m.model, true, who === 'usage' ? { stream_options: { include_usage: true } } : {});
        if (LEAD) await streaming(url, key, m.concurrency, m.lead, m.model, m.spreadMs, body);
        if (who === 'gateway') mark('start', `round ${i} ${measure}`);
        // the load generator's (this process) and the simulator's CPU beside the serving process's
        const client0 = process.cpuUsage();
        const sim0 = cpuUs(simPid);
        const r = await withCpu(pid, () => streaming(url, key, m.concurrency, m.total, m.model, m.spreadMs, body), (x) => x.streams);
        const clientUs = Math.round(((u) => u.user + u.system)(process.cpuUsage(client0)) / r.streams);
        const simUs = Math.round((cpuUs(simPid) - sim0) / r.streams);
        if (who === 'gateway') mark('end', `round ${i} ${measure}`, [r.streams, 'stream']);
        const alone = who === 'direct' || who === 'usage'; // the simulator is the serving process
        const own = alone ? '' : `main thread ${r.cpuMainUs} µs, other threads ${r.cpuUs - r.cpuMainUs} µs, `;
        const all = clientUs + simUs + (alone ? 0 : r.cpuUs);
        // the burst keeps every core busy: a stream's cycle is about 16 streams' CPU over the cores (session 4)
        const budget = measure === 'burst' ? `; ${m.concurrency} × ${all} µs / ${CORES} cores = ${round((m.concurrency * all) / CORES / 1000, 2).toFixed(2)} ms` : '';
        lines.push(`round ${i} ${measure.padEnd(8)} ${who.padEnd(7)} TTFB p50 ${round(r.ttfbP50, 2).toFixed(2)} ms, total p50 ${round(r.totalP50, 2).toFixed(2)} ms; CPU a stream: ${own}client ${clientUs} µs, simulator ${simUs} µs${budget}`);
      }
    }
  }
  gw.stop();
  sim.child.kill('SIGTERM');
  bare.child.kill('SIGTERM');
  for (const l of lines) console.log(l);
  if (TRACE) {
    const v8 = v8ByMeasure(fs.readFileSync(traceFile, 'utf8').split('\n'));
    console.log('\nV8 in the gateway, per measure (since its measure before / during it):');
    for (const [label, { before, during }] of v8) console.log(`${label.padEnd(17)} before: ${describe(before)}\n${''.padEnd(17)} during: ${describe(during, units.get(label))}`);
    console.log(`\nV8's trace of the gateway: ${traceFile}`);
  }
  process.exit(0);
}

if (isEntryPoint(import.meta.url)) main().catch((err) => { console.error(err); process.exit(1); });
