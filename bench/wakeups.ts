/**
 * How often the gateway and the bare proxy sleep and are woken per request, one request at a time, and how long they
 * wait for a core once woken:
 *
 *   npm run bench:wakeups -- [--modes c1,single] [--n 2000] [--rounds 3] [--warmup 3000]
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
 * the bare proxy would pay that beyond its instructions (session 45: it does not).
 *   c1      non-streamed chat (sim/echo)
 *   single  20-chunk streams as fast as the simulator writes (sim/chunks-20)
 */
import fs from 'node:fs';
import path from 'node:path';
import { MODEL, ROOT, STREAM_MODEL, arg, benchGateway, chatBody, chatOnce, children, formatTable, log, median, round, startBareProxy, startTs } from './lib.js';

const BODIES: Record<string, string> = { c1: chatBody(MODEL, false), single: chatBody(STREAM_MODEL, true) };
const MODES = (arg('--modes') ?? 'c1,single').split(',');
const N = Number(arg('--n') ?? 2000);
const ROUNDS = Number(arg('--rounds') ?? 3);
const WARMUP = Number(arg('--warmup') ?? 3000);
for (const m of MODES) if (!BODIES[m]) throw new Error(`--modes takes ${Object.keys(BODIES).join(', ')}`);

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
    const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
    const simUrl = sim.match[1];
    const bare = await startBareProxy(simUrl);
    const gw = await benchGateway('gateway', {}, simUrl);
    const targets = [
      { label: 'bare proxy', url: bare.match[1], key: 'unused', pid: bare.child.pid! },
      { label: 'gateway (sqlite)', url: gw.url, key: gw.key, pid: gw.pid },
    ];
    log(`warming each with ${WARMUP} requests of each mode`);
    for (const t of targets) for (let i = 0; i < WARMUP; i++) for (const m of MODES) await chatOnce(t.url, t.key, BODIES[m]);
    // [mode][target][round]
    const rounds = MODES.map(() => targets.map(() => [] as Array<ReturnType<typeof perRequest> & { wallUs: number }>));
    for (let r = 0; r < ROUNDS; r++) {
      for (const [m, mode] of MODES.entries()) {
        // the order alternates by round, so neither is always measured first
        for (const ti of r % 2 ? [1, 0] : [0, 1]) {
          const t = targets[ti];
          const before = threads(t.pid);
          const started = process.hrtime.bigint();
          for (let i = 0; i < N; i++) await chatOnce(t.url, t.key, BODIES[mode]);
          const wallUs = Number(process.hrtime.bigint() - started) / 1000 / N;
          rounds[m][ti].push({ ...perRequest(t.pid, before, threads(t.pid), N), wallUs });
          log(`round ${r + 1}/${ROUNDS} ${mode} ${t.label}: ${round(wallUs, 0)} µs a request`);
        }
      }
    }
    const rows: string[][] = [['mode', 'per request (medians of rounds)', ...targets.map((t) => t.label)]];
    const json: Record<string, unknown> = { n: N, rounds: ROUNDS, warmup: WARMUP, modes: {} };
    for (const [m, mode] of MODES.entries()) {
      const med = (f: (x: (typeof rounds)[0][0][0]) => number, d = 2) => targets.map((_, ti) => round(median(rounds[m][ti].map(f)), d));
      const figures: Array<[string, number[]]> = [
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
    console.log(`\n(${N} requests one at a time per mode, round and process, after ${WARMUP} of each mode; medians of ${ROUNDS} rounds)`);
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
