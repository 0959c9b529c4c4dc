/**
 * npm run bench:instructions: the gateway's work per request counted in instructions, two builds side by side.
 *
 *   npm run bench:instructions -- --base <rev> [--head <rev>] [--modes c1,single] [--n 400] [--reps 5] [--warmup 4000] [--bare] [--symbols 40] [--inclusive 40] [--head-flags '<node flags>'] [--flush-ms 1000] [--cache-sim]
 *
 * Time on this VM moves by 20–40 % within an hour, so a change worth a few per cent of a request's CPU cannot be
 * told from the drift by timing it, even side by side (`npm run bench:ab`: a 40 µs change was not resolved in
 * session 20). Instructions executed do not depend on what else the machine runs: valgrind's callgrind counts them
 * in user space, the same for the same program and inputs up to what V8 decides by the clock (below). Each build's
 * gateway (bundled from its own checkout, as `npm run bench:ab` does) runs under callgrind with instrumentation off
 * while it is warmed (`--warmup` requests of each mode, one at a time, the modes taking turns, so that V8 has compiled
 * its code for all of them); then, for `--reps` repetitions, each mode's `--n` requests one at a time are counted
 * (callgrind_control zeroes the counters before and dumps them after). It prints, per build and mode, the median over
 * the repetitions of instructions per request on the main thread (the event loop: the gateway's own work, Node's and
 * undici's) and in all threads (V8's compiler and GC helpers, the checkpoint worker), the change, in how many pairs
 * of repetitions the head counted fewer, the fewest of any repetition and the spread. In session 29 one build's main-thread counts still fell by 1–3 % from one repetition to
 * the next (V8 compiling after the warm-up), the other threads' moved by up to ~50 %, and two processes differed by a
 * few per cent beyond what a change explained: judge by the main thread, by the pairs (both builds' repetition k runs
 * at the same time), and by a changed function's own count in the dumps. JSON to bench/results/instructions.json, and
 * the dumps in a temporary directory (`callgrind_annotate`, with the gateway's JIT code named by `--perf-basic-prof`'s
 * map in /tmp/perf-<pid>.map) for where they went.
 *   c1      non-streamed chat (sim/echo)
 *   single  a 20-chunk stream (sim/chunks-20)
 *   paced   a 20-chunk stream with its chunks 10 ms apart (sim/chunks-20-every-10ms), as a model writes: each chunk
 *           read, mapped and written in a turn of the event loop of its own (warmed 16 at a time; count it with a
 *           smaller --n: a stream takes ~0.3 s under callgrind)
 * What it does not see: the kernel (system calls, the TCP stack: a third or more of a request's CPU here), waiting,
 * and anything the load's concurrency changes. Under callgrind the gateway runs ~50 times slower, so what a timer
 * batches (the usage recorder's flush, the WAL checkpoint) takes in fewer requests than at full speed and counts
 * for more per request than it does in `npm run bench`: compare builds with it, not with the timed figures.
 * A second table splits each build's main-thread count by the object file its code is in (since session 42): Node's
 * binary (V8's runtime, builtins and interpreter, Node's C++), the JIT's code, better-sqlite3's addon (SQLite and its
 * binding), the C library. The first two move with V8's tiers under callgrind (baseline code and its inline caches'
 * builtins where full speed runs optimised code: sessions 39 and 41); the addon's is C and does not, so a database
 * change reads there.
 * `--bare` counts the bench's bare pass-through proxy (bench/bare-proxy.ts: node:http + undici, the practical
 * ceiling of `npm run bench`) the same way, at the same time, and prints the head's count beside it: what the
 * gateway's own work costs in instructions, a figure the VM's speed does not move.
 * `--symbols <k>` (since session 44) prints, per mode, the k functions whose own instructions per request differ
 * most (more or fewer) between the head and what it is compared with (the bare proxy with `--bare`, else the base),
 * from each process's main-thread dump of the last repetition, the JIT's code named by its `--perf-basic-prof` map:
 * where the difference lies by function, without reading the dumps by hand (a map's name for an address is its
 * latest entry starting at or below it, so code that V8 moved may be named by what was there before). The gateway's
 * functions are named by their source module (`*push src/stream/sse.ts`), so that a change that moves the bundle's
 * lines still pairs them across builds.
 * `--inclusive <k>` (since session 46) prints, per mode, the k functions of the gateway's own code with the most
 * inclusive instructions per request in the head (their own and their callees'), beside the base's: which of its parts
 * a request's count goes to (the database's writes, the stream's mapping, the response's head), where `--symbols`
 * names the many small functions it is spread over.
 * `--cache-sim` (since session 66) runs callgrind with its cache simulation and prints, per mode, the main thread's
 * memory traffic per request: its data reads and writes, its first-level misses (of instructions and of data: the
 * accesses that reach the last-level cache) and its last-level misses, for each build and the bare proxy, with valgrind's
 * model of this machine's caches (its own process alone on them). On a VM whose last-level cache is shared with other
 * tenants, the accesses that reach it are the ones a neighbour's traffic turns into trips to memory: what a process
 * that makes more of them loses on a slow stretch beyond its instructions.
 * Loopback only; needs valgrind (on every machine of this kind; not used by the tests or CI).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { MODEL, PACED_MODEL, ROOT, STREAM_MODEL, arg, benchGateway, build, chatBody, chatOnce, formatTable, log, median, round, startTs, type Build } from './lib.js';

const BASE = arg('--base');
const HEAD = arg('--head');
const MODES = (arg('--modes') ?? 'c1,single').split(',');
const N = Number(arg('--n') ?? 400);
const REPS = Number(arg('--reps') ?? 5);
const WARMUP = Number(arg('--warmup') ?? 4000);
const BARE = process.argv.includes('--bare');
const SYMBOLS = Number(arg('--symbols') ?? 0);
const INCLUSIVE = Number(arg('--inclusive') ?? 0);
/** Node flags given to the head's gateway only, after the tool's own (a V8 flag counted on one build, as bench:ab's). */
const HEAD_FLAGS = (arg('--head-flags') ?? '').split(/\s+/).filter(Boolean);
/** The gateways' records flush interval while counted (RECORDS_FLUSH_MS; below TIMER_ENV). */
const FLUSH_MS = Number(arg('--flush-ms') ?? 1000);
const CACHE_SIM = process.argv.includes('--cache-sim');
/** callgrind's events with its cache simulation, by name: their sums per request for the memory table. */
const CACHE_FIGURES = [
  ['data reads and writes', ['Dr', 'Dw']],
  ['first-level instruction misses', ['I1mr']],
  ['first-level data misses', ['D1mr', 'D1mw']],
  ['last-level misses', ['ILmr', 'DLmr', 'DLmw']],
] as const;
const BODIES: Record<string, string> = { c1: chatBody(MODEL, false), single: chatBody(STREAM_MODEL, true), paced: chatBody(PACED_MODEL, true) };
/** Modes whose requests take long enough that their warm-up runs 16 at a time. */
const SLOW = new Set(['paced']);
for (const m of MODES) if (!BODIES[m]) throw new Error(`--modes takes ${Object.keys(BODIES).join(', ')}`);
if (!BASE) throw new Error('--base <rev> is required');

/**
 * The gateways' V8 is held to one young generation size, with no memory reducer. Both are driven by time: ~50 times
 * slower under callgrind, the gateway looked idle to V8, which shrank the young generation (scavenges 20 times as
 * often per request), deoptimised code at the reducing GC and took minutes to recover, so repetitions after it counted
 * 30–40 % more than those before. The JIT's functions are named for callgrind_annotate (`--perf-basic-prof`).
 */
const NODE_FLAGS = ['--perf-basic-prof', '--no-memory-reducer', '--min-semi-space-size=16', '--max-semi-space-size=16'];
/**
 * The gateways' timers that run by wall time are off (or an hour apart) while counting: the catalog's health refresh
 * (every 15 s, ~6.7 M instructions a refresh under callgrind), the C allocator's trim (5 s) and the instance
 * heartbeat's write (5 s). At full speed they come once per tens of thousands of requests; ~50 times slower under
 * callgrind, they came every few dozen and were counted as per-request work (~130,000 instructions a paced stream:
 * docs/PERFORMANCE.md, sessions 33 and 34).
 * The usage and health records' flush (src/engine/recorder.ts: one write 250 ms after the first record waits) is spread
 * out too (`--flush-ms`, default 1,000: RECORDS_FLUSH_MS): every 250 ms under callgrind, ~50 times slower, a flush wrote
 * ~50 times fewer requests' records than at full speed, and its transaction, its rollup, last-seen and bucket upserts
 * and the incident check after it counted that much more per request. Much longer is not better: a flush writes the
 * records of earlier repetitions and of the other modes, so which repetition pays for them becomes a matter of timing
 * (at 5,000 ms the repetitions of one build spread by 11–12 %, at 1,000 ms by 2–7 %: session 47). A build from before
 * session 47 ignores the variable and flushes every 250 ms: compare the records' share across that boundary with care.
 */
const TIMER_ENV = { CATALOG_HEALTH_REFRESH_MS: '0', MEMORY_TRIM_INTERVAL_MS: '0', INSTANCE_HEARTBEAT_MS: '600000', RECORDS_FLUSH_MS: String(FLUSH_MS) };
const OUT = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-instructions-'));
/** callgrind_control finds a process by a file named with $USER and $HOST: the gateway's HOST is 127.0.0.1. */
const control = (pid: number, ...args: string[]) =>
  execFileSync('callgrind_control', [`--vgdb-prefix=${OUT}/vgdb`, ...args, String(pid)], { env: { ...process.env, HOST: '127.0.0.1' }, stdio: ['ignore', 'ignore', 'inherit'] });

/** The gateways' node binary as callgrind names it (the file itself, not a link to it). */
const NODE_BINARY = fs.realpathSync(process.execPath);
const PARTS = ['node', 'jit', 'sqlite', 'libc', 'other'] as const;
type Part = (typeof PARTS)[number];
const PART_NAMES: Record<Part, string> = {
  node: "Node's binary (V8's runtime, builtins and interpreter, Node's C++)", jit: "V8's compiled JavaScript",
  sqlite: "better-sqlite3's addon (SQLite and its binding's own code)", libc: 'the C library', other: 'other libraries',
};

/**
 * A dump's own (self) instructions by object file, and by function: callgrind writes `ob=` and `fn=` before a
 * function's costs (`cob=` and `cfn=` name a call's callee), names each the first time and numbers it after, and
 * after a `calls=` line the next cost line is the call's inclusive cost, not the caller's own. Code V8 compiled at run
 * time belongs to no file (`???`) and its functions are addresses. The binding's calls into V8's API (a statement's
 * result object) count as Node's binary.
 */
function selfCosts(file: string): { parts: Record<Part, number>; fns: Map<string, number>; calls: Map<string, number> } {
  const obNames = new Map<string, string>();
  const fnNames = new Map<string, string>();
  const parts: Record<Part, number> = { node: 0, jit: 0, sqlite: 0, libc: 0, other: 0 };
  const fns = new Map<string, number>();
  /** By caller: the inclusive cost of its calls to other functions (its own plus these is its inclusive cost). */
  const calls = new Map<string, number>();
  let part: Part = 'other';
  let fn = '';
  let callee = '';
  let afterCall = false;
  const named = (names: Map<string, string>, m: RegExpExecArray) => {
    if (m[1] !== undefined && m[2]) names.set(m[1], m[2]);
    return m[1] !== undefined ? names.get(m[1]) ?? '' : m[2];
  };
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('ob=') || line.startsWith('cob=')) {
      const name = named(obNames, /^c?ob=(?:\((\d+)\))? ?(.*)$/.exec(line)!);
      if (line[0] === 'o') {
        part = name === NODE_BINARY ? 'node' : name === '???' ? 'jit'
          : name.includes('better_sqlite3') ? 'sqlite' : /\/libc\.so/.test(name) ? 'libc' : 'other';
      }
      continue;
    }
    if (line.startsWith('fn=') || line.startsWith('cfn=')) {
      const name = named(fnNames, /^c?fn=(?:\((\d+)\))? ?(.*)$/.exec(line)!);
      if (line[0] === 'f') fn = name;
      else callee = name;
      continue;
    }
    if (line.startsWith('calls=')) {
      afterCall = true;
      continue;
    }
    const c = line.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) { // a cost line: a position (digits, +, - or *), then Ir
      if (afterCall) {
        afterCall = false;
        if (callee !== fn) calls.set(fn, (calls.get(fn) ?? 0) + Number(line.split(' ')[1] ?? 0));
      } else {
        const ir = Number(line.split(' ')[1] ?? 0);
        parts[part] += ir;
        fns.set(fn, (fns.get(fn) ?? 0) + ir);
      }
    }
  }
  return { parts, fns, calls };
}

/**
 * A process's JIT code addresses named from its `--perf-basic-prof` map (/tmp/perf-<pid>.map: `start size name` in
 * hex, appended as V8 compiles), read once when the process is done: a file URL cut to its file's name and line.
 * A function of `bundle`, a gateway build's esbuild bundle, is named by the source module it came from (the bundle's
 * `// src/…` markers), not by its line: the same function then has the same name in both builds, whatever a change
 * moved in the bundle (until session 46 it was `gateway.js:<line>`, and every function below a changed line was
 * listed twice, once gone and once new). Two functions of one name in one module count as one.
 */
function jitNames(pid: number, bundle?: string): (addr: number) => string {
  const moduleOf = bundle ? bundleModules(bundle) : undefined;
  const entries = new Map<number, { end: number; name: string }>(); // by start: the latest entry wins
  const mapFile = `/tmp/perf-${pid}.map`;
  if (fs.existsSync(mapFile)) {
    for (const line of fs.readFileSync(mapFile, 'utf8').split('\n')) {
      const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
      if (m) entries.set(parseInt(m[1], 16), { end: parseInt(m[1], 16) + parseInt(m[2], 16), name: m[3] });
    }
  }
  const starts = [...entries.keys()].sort((a, b) => a - b);
  return (addr: number): string => {
    let lo = 0;
    let hi = starts.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid] <= addr) { at = mid; lo = mid + 1; } else hi = mid - 1;
    }
    const e = at >= 0 ? entries.get(starts[at])! : undefined;
    if (!e || addr >= e.end) return 'JIT code without a name';
    const name = moduleOf ? e.name.replace(`${pathToFileURL(bundle!).href}:`, 'gateway.js:').replace(/gateway\.js:(\d+):\d+/, (_, l) => moduleOf(Number(l))) : e.name;
    return name.replace(/file:\/\/\S*\/([^/\s]+\.js):(\d+):\d+/, '$1:$2');
  };
}

/** For each line of an esbuild bundle, the source module it came from (`src/…`; `gateway.js` before the first). */
function bundleModules(bundle: string): (line: number) => string {
  const starts: Array<[number, string]> = [];
  fs.readFileSync(bundle, 'utf8').split('\n').forEach((text, i) => {
    const m = /^\/\/ (src\/\S+)$/.exec(text);
    if (m) starts.push([i + 1, m[1]]);
  });
  return (line) => {
    let name = 'gateway.js';
    for (const [at, module] of starts) {
      if (at > line) break;
      name = module;
    }
    return name;
  };
}

/**
 * A process's functions by their own instructions per request (a main-thread dump's, from selfCosts): the JIT's
 * addresses by `jitName` (jitNames), C++ names without their parameters (an anonymous namespace kept as `{anonymous}`).
 */
function functionsPerRequest(fns: Map<string, number>, n: number, jitName: (addr: number) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const [fn, ir] of fns) {
    const name = /^0x[0-9a-f]+$/.test(fn) ? jitName(parseInt(fn, 16)) : fn.replaceAll('(anonymous namespace)', '{anonymous}').replace(/\(.*$/, '');
    out.set(name, (out.get(name) ?? 0) + ir / n);
  }
  return out;
}

/**
 * The gateway's own functions (its bundle's, named by source module) by their inclusive instructions per request: own
 * plus what the calls they make cost, V8's tiers of one function (`*`, `^`, `~`) counted as one. Only what runs inside
 * the call counts: an async function's code after an `await` runs from the microtask queue, and is counted under it
 * from there, not under its caller. A function whose tiers call each other (rare) is counted twice.
 */
function gatewayInclusive(fns: Map<string, number>, calls: Map<string, number>, n: number, jitName: (addr: number) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const fn of new Set([...fns.keys(), ...calls.keys()])) {
    // (a recursion's inner calls, `<fn>'2`, are inside the outer call's cost already)
    if (!/^0x[0-9a-f]+$/.test(fn)) continue;
    const name = jitName(parseInt(fn, 16)).replace(/^JS:[*^~+]?/, '');
    if (!/ src\//.test(name)) continue;
    out.set(name, (out.get(name) ?? 0) + ((fns.get(fn) ?? 0) + (calls.get(fn) ?? 0)) / n);
  }
  return out;
}

/** Every name of two per-request maps, with its value in each (0 where absent). */
function bothOf(fa: Map<string, number>, fb: Map<string, number>): Array<{ name: string; a: number; b: number }> {
  return [...new Set([...fa.keys(), ...fb.keys()])].map((name) => ({ name, a: fa.get(name) ?? 0, b: fb.get(name) ?? 0 }));
}

/**
 * Instructions per thread in the dumps of `pid` made since `seen` (callgrind names them <pid>.<dump>-<thread>), the
 * main thread's by object file and by function (for `--symbols`), and its totals by event (`--cache-sim`'s).
 */
function dumped(pid: number, seen: Set<string>): { main: number; all: number; parts: Record<Part, number>; fns: Map<string, number>; calls: Map<string, number>; events: Map<string, number> } {
  let main = 0;
  /** The main thread's totals by event name (Ir alone without `--cache-sim`). */
  const events = new Map<string, number>();
  const fns = new Map<string, number>();
  const calls = new Map<string, number>();
  let all = 0;
  const parts: Record<Part, number> = { node: 0, jit: 0, sqlite: 0, libc: 0, other: 0 };
  for (const f of fs.readdirSync(OUT)) {
    if (seen.has(f) || !f.startsWith(`callgrind.out.${pid}.`)) continue;
    seen.add(f);
    const text = fs.readFileSync(path.join(OUT, f), 'utf8');
    // the dump's totals, one per event, in the `events:` line's order (Ir first)
    const totals = /^(?:summary|totals): (.*)$/m.exec(text)?.[1].trim().split(/\s+/).map(Number) ?? [];
    const n = totals[0] ?? 0;
    all += n;
    if (f.endsWith('-01')) {
      main += n;
      const names = /^events: (.*)$/m.exec(text)?.[1].trim().split(/\s+/) ?? [];
      names.forEach((e, i) => events.set(e, (events.get(e) ?? 0) + (totals[i] ?? 0)));
      const own = selfCosts(path.join(OUT, f));
      for (const p of PARTS) parts[p] += own.parts[p];
      for (const [fn, ir] of own.fns) fns.set(fn, (fns.get(fn) ?? 0) + ir);
      for (const [fn, ir] of own.calls) calls.set(fn, (calls.get(fn) ?? 0) + ir);
    }
  }
  return { main, all, parts, fns, calls, events };
}

async function main() {
  const builds: Build[] = [];
  try {
    builds.push(build(BASE, 'instructions'));
    builds.push(build(HEAD, 'instructions'));
    if (HEAD_FLAGS.length) builds[1].label += ` ${HEAD_FLAGS.join(' ')}`;
    const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
    const wrap = ['valgrind', '-q', '--tool=callgrind', '--smc-check=all-non-file', '--separate-threads=yes', '--instr-atstart=no', ...(CACHE_SIM ? ['--cache-sim=yes'] : []),
      `--vgdb-prefix=${OUT}/vgdb`, `--callgrind-out-file=${OUT}/callgrind.out.%p`];
    log(`starting both gateways under callgrind (dumps in ${OUT})`);
    const gws: Array<{ url: string; key: string; pid: number; child: { kill(s: NodeJS.Signals): unknown } }> =
      await Promise.all(builds.map((b, i) => benchGateway(b.label, TIMER_ENV, sim.match[1], i === 1 ? [...NODE_FLAGS, ...HEAD_FLAGS] : NODE_FLAGS, b.file, b.root, { wrap, startS: 300 })));
    const labels = builds.map((b) => b.label);
    if (BARE) {
      log('starting the bare proxy under callgrind');
      // HOST: as the gateways' (callgrind_control finds the process by it)
      const bare = await startTs('bench/bare-proxy.ts', [sim.match[1], '0'], { HOST: '127.0.0.1' }, /(http:\/\/127\.0\.0\.1:\d+)/,
        { wrap, nodeArgs: NODE_FLAGS, startS: 300 });
      gws.push({ url: bare.match[1], key: 'unused', pid: bare.child.pid!, child: bare.child });
      labels.push('bare proxy');
    }
    // The modes take turns request by request: code V8 optimised for one alone is thrown away when the other comes
    // (a mode measured after another ran partly in V8's baseline tier), and fed both it stays.
    log(`warming each with ${WARMUP} requests of each mode, taking turns (not counted)`);
    const fast = MODES.filter((m) => !SLOW.has(m));
    const slow = MODES.filter((m) => SLOW.has(m));
    await Promise.all(gws.flatMap((gw) => [
      (async () => { for (let i = 0; i < WARMUP; i++) for (const m of fast) await chatOnce(gw.url, gw.key, BODIES[m]); })(),
      ...Array.from({ length: slow.length ? 16 : 0 }, async (_, w) => { for (let i = w; i < WARMUP; i += 16) for (const m of slow) await chatOnce(gw.url, gw.key, BODIES[m]); }),
    ]));
    for (const gw of gws) control(gw.pid, '--instr=on');
    // the code is translated again once instrumented: a few requests more before counting
    await Promise.all(gws.map(async (gw) => { for (let i = 0; i < 50; i++) for (const m of MODES) await chatOnce(gw.url, gw.key, BODIES[m]); }));
    const seen = new Set(fs.readdirSync(OUT));
    const counts = labels.map(() => MODES.map(() => [] as Array<{ main: number; all: number; parts: Record<Part, number>; memory: number[] }>)); // [build (, bare)][mode][rep]
    const lastFns = labels.map(() => MODES.map(() => new Map<string, number>())); // [build (, bare)][mode]: the last repetition's main thread by function
    const lastCalls = labels.map(() => MODES.map(() => new Map<string, number>())); // the same: what each function's calls cost
    for (let rep = 0; rep < REPS; rep++) {
      for (let m = 0; m < MODES.length; m++) {
        // both builds (and the bare proxy) at once: the counts do not depend on the others' load
        await Promise.all(gws.map(async (gw, b) => {
          control(gw.pid, '--zero');
          for (let i = 0; i < N; i++) await chatOnce(gw.url, gw.key, BODIES[MODES[m]]);
          control(gw.pid, '--dump');
          for (let t = 0; t < 100 && !fs.readdirSync(OUT).some((f) => !seen.has(f) && f.startsWith(`callgrind.out.${gw.pid}.`) && f.endsWith('-01')); t++) await new Promise((r) => setTimeout(r, 100));
          await new Promise((r) => setTimeout(r, 500)); // every thread's file written
          const d = dumped(gw.pid, seen);
          const per = { main: Math.round(d.main / N), all: Math.round(d.all / N), parts: Object.fromEntries(PARTS.map((p) => [p, Math.round(d.parts[p] / N)])) as Record<Part, number>,
            memory: CACHE_FIGURES.map(([, evs]) => Math.round(evs.reduce((sum, e) => sum + (d.events.get(e) ?? 0), 0) / N)) };
          counts[b][m].push(per);
          lastFns[b][m] = d.fns;
          lastCalls[b][m] = d.calls;
          log(`rep ${rep + 1}/${REPS} ${labels[b]} ${MODES[m]}: ${per.main} on the main thread, ${per.all} in all per request`);
        }));
      }
    }
    for (const gw of gws) gw.child.kill('SIGKILL');
    sim.child.kill('SIGTERM');

    const rows: string[][] = [['mode', 'instructions per request', builds[0].label, builds[1].label, 'change', 'head fewer in',
      'fewest (base / head)', 'spread of reps (base / head)', ...(BARE ? ['bare proxy', 'head − bare'] : [])]];
    const json: Record<string, unknown> = { base: builds[0].label, head: builds[1].label, n: N, reps: REPS, warmup: WARMUP, dumps: OUT, modes: {} };
    MODES.forEach((mode, m) => {
      const figures = (['main', 'all'] as const).map((k) => {
        const base = counts[0][m].map((c) => c[k]);
        const head = counts[1][m].map((c) => c[k]);
        // repetition k of both builds ran at the same time
        const fewer = head.filter((h, i) => h < base[i]).length;
        const spread = (xs: number[]) => `${round(((Math.max(...xs) - Math.min(...xs)) / median(xs)) * 100, 1)} %`;
        const bare = BARE ? counts[2][m].map((c) => c[k]) : undefined;
        rows.push([mode, k === 'main' ? 'main thread' : 'all threads', String(median(base)), String(median(head)),
          `${round(((median(head) - median(base)) / median(base)) * 100, 1)} %`, `${fewer} of ${REPS} pairs`,
          `${Math.min(...base)} / ${Math.min(...head)}`, `${spread(base)} / ${spread(head)}`,
          ...(bare ? [String(median(bare)), `${median(head) - median(bare)} (${round(median(head) / median(bare), 2)} ×)`] : [])]);
        return { figure: k, base, head, baseMedian: median(base), headMedian: median(head), headFewerInPairs: fewer, baseFewest: Math.min(...base), headFewest: Math.min(...head),
          ...(bare ? { bare, bareMedian: median(bare) } : {}) };
      });
      (json.modes as Record<string, unknown>)[mode] = figures;
    });
    // The main thread by object file: V8's tiers and what callgrind's slowness makes of them move the JavaScript's
    // counts (docs/PERFORMANCE.md, sessions 39 and 41), SQLite's own code does not.
    const partRows: string[][] = [['mode', 'main thread, per request', ...labels]];
    const partsJson: Record<string, unknown> = {};
    MODES.forEach((mode, m) => {
      partsJson[mode] = Object.fromEntries(PARTS.map((p) => {
        const med = labels.map((_, b) => median(counts[b][m].map((c) => c.parts[p])));
        partRows.push([mode, PART_NAMES[p], ...med.map(String)]);
        return [p, Object.fromEntries(labels.map((l, b) => [l, med[b]]))];
      }));
    });
    json.mainByObject = partsJson;
    // The main thread's memory traffic (--cache-sim): what of it reaches the last-level cache, and misses there.
    const memoryRows: string[][] = [];
    if (CACHE_SIM) {
      memoryRows.push(['mode', 'main thread, per request (simulated caches)', ...labels, ...(BARE ? ['head / bare'] : [])]);
      const memoryJson: Record<string, unknown> = {};
      MODES.forEach((mode, m) => {
        memoryJson[mode] = Object.fromEntries(CACHE_FIGURES.map(([name], k) => {
          const med = labels.map((_, b) => median(counts[b][m].map((c) => c.memory[k])));
          memoryRows.push([mode, name, ...med.map(String), ...(BARE ? [`${round(med[1] / med[2], 2)} ×`] : [])]);
          return [name, Object.fromEntries(labels.map((l, b) => [l, med[b]]))];
        }));
      });
      json.memory = memoryJson;
    }
    // Each process's JIT names, made once (its perf map and bundle read once) for --symbols and --inclusive.
    const names = gws.map((gw, b) => (SYMBOLS > 0 || INCLUSIVE > 0 ? jitNames(gw.pid, builds[b]?.file) : () => ''));
    // The functions that differ most: the head against the bare proxy (--bare) or the base, per request.
    const symbolRows: string[][] = [];
    if (SYMBOLS > 0) {
      const other = BARE ? 2 : 0;
      symbolRows.push(['mode', 'function (own instructions, main thread, per request)', labels[other], labels[1], 'difference']);
      const symbolsJson: Record<string, unknown> = {};
      MODES.forEach((mode, m) => {
        const [fa, fb] = [other, 1].map((b) => functionsPerRequest(lastFns[b][m], N, names[b]));
        const diff = bothOf(fa, fb).sort((x, y) => Math.abs(y.b - y.a) - Math.abs(x.b - x.a)).slice(0, SYMBOLS);
        for (const d of diff) symbolRows.push([mode, d.name.slice(0, 100), String(Math.round(d.a)), String(Math.round(d.b)), String(Math.round(d.b - d.a))]);
        symbolsJson[mode] = diff.map((d) => ({ name: d.name, compared: Math.round(d.a), head: Math.round(d.b) }));
      });
      json.symbols = { compared: labels[other], head: labels[1], modes: symbolsJson };
    }
    // The gateway's functions with the most inclusive instructions: where a request's cost goes by the code's own parts.
    const inclusiveRows: string[][] = [];
    if (INCLUSIVE > 0) {
      inclusiveRows.push(['mode', "the gateway's function (inclusive instructions, main thread, per request)", labels[0], labels[1], 'difference']);
      const inclusiveJson: Record<string, unknown> = {};
      MODES.forEach((mode, m) => {
        const [fa, fb] = [0, 1].map((b) => gatewayInclusive(lastFns[b][m], lastCalls[b][m], N, names[b]));
        const top = bothOf(fa, fb).sort((x, y) => y.b - x.b).slice(0, INCLUSIVE);
        for (const d of top) inclusiveRows.push([mode, d.name.slice(0, 100), String(Math.round(d.a)), String(Math.round(d.b)), String(Math.round(d.b - d.a))]);
        inclusiveJson[mode] = top.map((d) => ({ name: d.name, base: Math.round(d.a), head: Math.round(d.b) }));
      });
      json.inclusive = { base: labels[0], head: labels[1], modes: inclusiveJson };
    }
    console.log(formatTable(rows));
    console.log(`\n${formatTable(partRows)}`);
    if (memoryRows.length) console.log(`\n${formatTable(memoryRows)}`);
    if (symbolRows.length) console.log(`\n${formatTable(symbolRows)}\n(the last repetition's main-thread dumps)`);
    if (inclusiveRows.length) console.log(`\n${formatTable(inclusiveRows)}\n(the last repetition's main-thread dumps; a function's inclusive count holds its callees', so the rows overlap)`);
    console.log(`\n(medians of ${REPS} repetitions of ${N} requests one at a time, both builds${BARE ? ' and the bare proxy' : ''} under callgrind at once after ${WARMUP} requests of each mode, the records flushed every ${FLUSH_MS} ms; dumps in ${OUT})`);
    fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, 'bench/results/instructions.json'), JSON.stringify(json, null, 2));
    log('wrote bench/results/instructions.json');
  } finally {
    for (const b of builds) b.cleanup?.();
  }
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
