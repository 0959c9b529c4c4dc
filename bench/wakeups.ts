/**
 * How often the gateway and the bare proxy sleep and are woken per request (one request at a time, or paced streams 16
 * at a time), how long they wait for a core once woken, and what a sleep and a wake cost on this machine:
 *
 *   npm run bench:wakeups -- [--modes c1,single,spread,together] [--n 2000] [--streams 480] [--rounds 3] [--warmup 3000]
 *
 * Starts the simulator, the bare proxy (bench/bare-proxy.ts) and the gateway (SQLite, `npm start`'s flags), warms each
 * with `--warmup` requests of each mode, then per round and mode sends `--n` requests one at a time to each in turn and
 * reads every thread's /proc counters before and after: voluntary context switches (the thread slept, waiting for
 * I/O or a lock, and was woken), involuntary ones (it was preempted), its time on a core and its time runnable but
 * waiting for one (schedstat), per request; the main thread (the event loop) apart from the others (V8's compiler and
 * GC helpers, libuv's pool, the WAL checkpointer's worker). Figures are medians of the rounds: a table, and JSON in
 * bench/results/wakeups.json.
 *
 * What it is for: instructions (`npm run bench:instructions`) count the work, not the waits around it. On a shared VM
 * each sleep and wake-up of a process costs more on a slow stretch; a gateway that slept more often per request than
 * the bare proxy would pay that beyond its instructions (session 45: it does not). Since session 62 it first times a
 * sleep and a wake in its own process (a chain of `setTimeout(1)`, the main thread's CPU a wake: ~55 µs in a bare
 * `node` on this project's VM and ~76 in this tool's process, of which ~30 µs is the kernel's, against ~1 µs for a
 * cheap system call), and measures paced streams
 * too: there the gateway's main thread sleeps and wakes as often as the bare proxy's, ~9 times a stream
 * (docs/PERFORMANCE.md, session 62).
 *   c1        non-streamed chat (sim/echo), one at a time
 *   single    20-chunk streams as fast as the simulator writes (sim/chunks-20), one at a time
 *   spread    20-chunk streams paced 10 ms apart (sim/chunks-20-every-10ms), 16 at a time, starts spread over a stream
 *   together  the same, the 16 started together
 * Paced modes are warmed as `npm run bench` warms (bench/lib.ts warmTarget) instead of with `--warmup` requests, and
 * count `--streams` streams a round, each round led in by a sixth as many.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MODEL, PACED_MODEL, PACED_STREAM_MS, ROOT, STREAM_MODEL, arg, benchGateway, chatBody, chatOnce, children, formatTable, log, median, round, startBareProxy, startTs, streaming, warmTarget } from './lib.js';

const BODIES: Record<string, string> = { c1: chatBody(MODEL, false), single: chatBody(STREAM_MODEL, true) };
/** The paced modes: 16 streams at a time, their starts spread over a stream's length or all at once. */
const PACED: Record<string, number> = { spread: PACED_STREAM_MS, together: 0 };
const MODES = (arg('--modes') ?? 'c1,single').split(',');
const N = Number(arg('--n') ?? 2000);
const STREAMS = Number(arg('--streams') ?? 480);
const ROUNDS = Number(arg('--rounds') ?? 3);
const WARMUP = Number(arg('--warmup') ?? 3000);
for (const m of MODES) if (!BODIES[m] && PACED[m] === undefined) throw new Error(`--modes takes ${[...Object.keys(BODIES), ...Object.keys(PACED)].join(', ')}`);

/** One thread's counters: context switches, and ns on a core and runnable waiting for one. */
interface Counters { voluntary: number; involuntary: number; cpuNs: number; waitNs: number }
const ZERO: Counters = { voluntary: 0, involuntary: 0, cpuNs: 0, waitNs: 0 };

/** Every thread of `pid` by its id (a thread that ended meanwhile is left out). */
function threads(pid: number): Map<string, Counters> {
  const out = new Map<string, Counters>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = fs.readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const [cpuNs, waitNs] = fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      out.set(tid, {
        voluntary: Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0),
        involuntary: Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0),
        cpuNs, waitNs,
      });
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** The main thread's CPU a sleep and a wake in this process: a chain of `count` one-millisecond timers, in µs each. */
async function wakeCostUs(count = 2000): Promise<number> {
  const me = String(process.pid);
  const before = threads(process.pid).get(me)!.cpuNs;
  for (let i = 0; i < count; i++) await new Promise((resolve) => setTimeout(resolve, 1));
  return (threads(process.pid).get(me)!.cpuNs - before) / count / 1000;
}

/** What the main thread and the others did between two readings, per request. */
function perRequest(pid: number, before: Map<string, Counters>, after: Map<string, Counters>, n: number) {
  const main = { ...ZERO };
  const others = { ...ZERO };
  for (const [tid, a] of after) {
    const b = before.get(tid) ?? ZERO;
    const into = tid === String(pid) ? main : others;
    into.voluntary += a.voluntary - b.voluntary;
    into.involuntary += a.involuntary - b.involuntary;
    into.cpuNs += a.cpuNs - b.cpuNs;
    into.waitNs += a.waitNs - b.waitNs;
  }
  const per = (c: Counters) => ({ voluntary: c.voluntary / n, involuntary: c.involuntary / n, cpuUs: c.cpuNs / n / 1000, waitUs: c.waitNs / n / 1000 });
  return { main: per(main), others: per(others) };
}

async function main() {
  try {
    // before anything else runs here (the children are not started yet)
    const wakeUs = await wakeCostUs();
    log(`a sleep and a wake of this process's main thread: ${round(wakeUs, 1)} µs of CPU`);
    const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
    const simUrl = sim.match[1];
    const bare = await startBareProxy(simUrl);
    const gw = await benchGateway('gateway', {}, simUrl);
    const targets = [
      { label: 'bare proxy', url: bare.match[1], key: 'unused', pid: bare.child.pid! },
      { label: 'gateway (sqlite)', url: gw.url, key: gw.key, pid: gw.pid },
    ];
    const oneAtATime = MODES.filter((m) => BODIES[m]);
    if (oneAtATime.length) {
      log(`warming each with ${WARMUP} requests of ${oneAtATime.join(', ')}`);
      for (const t of targets) for (let i = 0; i < WARMUP; i++) for (const m of oneAtATime) await chatOnce(t.url, t.key, BODIES[m]);
    }
    if (MODES.some((m) => PACED[m] !== undefined)) {
      log('warming each as npm run bench does (for the paced modes)');
      for (const t of targets) await warmTarget(t.url, t.key, false);
    }
    // [mode][target][round]
    const rounds = MODES.map(() => targets.map(() => [] as Array<ReturnType<typeof perRequest> & { wallUs: number; firstByteMs?: number }>));
    for (let r = 0; r < ROUNDS; r++) {
      for (const [m, mode] of MODES.entries()) {
        // the order alternates by round, so neither is always measured first
        for (const ti of r % 2 ? [1, 0] : [0, 1]) {
          const t = targets[ti];
          const paced = PACED[mode];
          const n = paced === undefined ? N : STREAMS;
          // a paced round is led in, uncounted, by a sixth as many streams (the benchmark's measures by a quarter)
          if (paced !== undefined) await streaming(t.url, t.key, 16, Math.round(n / 6), PACED_MODEL, paced);
          const before = threads(t.pid);
          const started = process.hrtime.bigint();
          let firstByteMs: number | undefined;
          if (paced === undefined) {
            for (let i = 0; i < n; i++) await chatOnce(t.url, t.key, BODIES[mode]);
          } else {
            const s = await streaming(t.url, t.key, 16, n, PACED_MODEL, paced);
            if (s.errors) throw new Error(`${t.label}: ${s.errors} of ${n} paced streams failed`);
            firstByteMs = s.ttfbP50;
          }
          const wallUs = Number(process.hrtime.bigint() - started) / 1000 / n;
          rounds[m][ti].push({ ...perRequest(t.pid, before, threads(t.pid), n), wallUs, firstByteMs });
          log(`round ${r + 1}/${ROUNDS} ${mode} ${t.label}: ${round(wallUs, 0)} µs a ${paced === undefined ? 'request' : 'stream (wall time over 16 at a time)'}`);
        }
      }
    }
    const rows: string[][] = [['mode', 'per request or stream (medians of rounds)', ...targets.map((t) => t.label)]];
    const json: Record<string, unknown> = { n: N, streams: STREAMS, rounds: ROUNDS, warmup: WARMUP, wakeCostUs: round(wakeUs, 1), modes: {} };
    for (const [m, mode] of MODES.entries()) {
      const med = (f: (x: (typeof rounds)[0][0][0]) => number, d = 2) => targets.map((_, ti) => round(median(rounds[m][ti].map(f)), d));
      const figures: Array<[string, number[]]> = [
        ...(PACED[mode] === undefined ? [] : [['time to first byte p50, ms', med((x) => x.firstByteMs ?? NaN, 3)] as [string, number[]]]),
        ['client-side time, µs', med((x) => x.wallUs, 0)],
        ['main thread: voluntary switches (woken)', med((x) => x.main.voluntary)],
        ['main thread: involuntary switches (preempted)', med((x) => x.main.involuntary)],
        ['main thread: CPU µs', med((x) => x.main.cpuUs, 0)],
        ['main thread: µs runnable, waiting for a core', med((x) => x.main.waitUs, 0)],
        ['other threads: voluntary switches', med((x) => x.others.voluntary)],
        ['other threads: CPU µs', med((x) => x.others.cpuUs, 0)],
      ];
      for (const [name, values] of figures) rows.push([mode, name, ...values.map(String)]);
      (json.modes as Record<string, unknown>)[mode] = Object.fromEntries(figures.map(([name, values]) => [name, Object.fromEntries(targets.map((t, ti) => [t.label, values[ti]]))]));
    }
    console.log(formatTable(rows));
    console.log(`\n(per mode, round and process: ${N} requests one at a time (c1, single), after ${WARMUP} of each, or ${STREAMS} paced streams 16 at a time (spread, together), after the benchmark's warm-up; medians of ${ROUNDS} rounds)`);
    console.log(`a sleep and a wake of a Node.js main thread on this machine: ${round(wakeUs, 1)} µs of CPU (a chain of setTimeout(1) in this process)`);
    fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, 'bench/results/wakeups.json'), `${JSON.stringify(json, null, 2)}\n`);
    log('wrote bench/results/wakeups.json');
  } finally {
    for (const c of children) c.kill('SIGTERM');
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
