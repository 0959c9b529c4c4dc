/**
 * Shared pieces of the benchmarks (bench/run.ts, profile.ts, ab.ts, timeline.ts): process start-up, load generators,
 * the gateway under test and the builds of other revisions. Loopback only; every run is bounded in time and count.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Agent, request } from 'undici';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The module at `moduleUrl` (its `import.meta.url`) is the script node was started with: a tool's `main` runs only then, so tests can import its helpers. */
export const isEntryPoint = (moduleUrl: string): boolean => !!process.argv[1] && fileURLToPath(moduleUrl) === path.resolve(process.argv[1]);
export const MODEL = 'sim/echo';
/** 20 chunks sent as fast as the upstream can write them: the gateway's cost per stream under saturation. */
export const STREAM_MODEL = 'sim/chunks-20';
/** 20 chunks 10 ms apart, as a model writes (~100 chunks/s): the latency a stream's reader sees. */
export const PACED_MODEL = 'sim/chunks-20-every-10ms';
/** How long one PACED_MODEL stream lasts: the span over which the workers' first requests are spread. */
export const PACED_STREAM_MS = 200;
export const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);
/** A command-line option's value (`--name value`), or undefined. */
export const arg = (name: string): string | undefined => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : undefined; };

export const children: ChildProcess[] = [];
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });

export function startTs(script: string, args: string[], env: Record<string, string>, ready: RegExp,
  /** `wrap`: a command the script runs under (bench/instructions.ts: valgrind), `nodeArgs`: node flags, `startS`: how long it may take. */
  opts: { wrap?: string[]; nodeArgs?: string[]; startS?: number } = {}): Promise<{ child: ChildProcess; out: () => string; match: RegExpMatchArray }> {
  const command = [...(opts.wrap ?? []), process.execPath, ...(opts.nodeArgs ?? []), '--import', 'tsx', path.join(ROOT, script), ...args];
  const child = spawn(command[0], command.slice(1), { cwd: ROOT, env: { ...process.env, ...env } });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${script} did not start:\n${out}`)), (opts.startS ?? 30) * 1000);
    const on = (d: Buffer) => {
      out += d;
      const m = out.match(ready);
      if (m) { clearTimeout(t); resolve({ child, out: () => out, match: m }); }
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
    child.on('exit', (code) => { clearTimeout(t); reject(new Error(`${script} exited ${code}:\n${out}`)); });
  });
}

/** Runs a TypeScript script of the checkout at `root` (this one unless an older revision's, bench/ab.ts). */
export function runTs(script: string, args: string[], env: Record<string, string>, root = ROOT): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', 'tsx', path.join(root, script), ...args], { cwd: root, env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (err += d));
    c.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`${script} ${args.join(' ')}: ${err}`))));
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export const rssOf = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
};

/**
 * The CPU time a process's threads have used so far, in µs: the sum of each thread's time on a CPU from
 * /proc/<pid>/task/<tid>/schedstat (nanoseconds; /proc/<pid>/stat counts in 10 ms ticks, too coarse for a few
 * hundred streams). Threads that ended are not counted: Node's (main, libuv pool, V8 helpers) live as long as it.
 */
export const cpuUs = (pid: number): number => {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) ns += threadNs(pid, tid);
  return ns / 1000;
};
/** A thread's time on a CPU so far, in ns (0 once it ended). */
const threadNs = (pid: number, tid: string): number => {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return 0; // the thread ended meanwhile
  }
};
/** The same for the main thread alone (the event loop); the rest is V8's helpers (compilers, GC), libuv's pool, workers. */
const mainCpuUs = (pid: number): number => threadNs(pid, String(pid)) / 1000;
/**
 * A process's CPU time so far in user mode and in the kernel, in clock ticks (/proc/<pid>/stat's utime and stime, 10
 * ms each: coarse, but a loaded measure takes hundreds of them). Fields 14 and 15, counted after the command's
 * parenthesis, which may hold spaces.
 */
const userSysTicks = (pid: number): [number, number] => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [Number(fields[11]), Number(fields[12])];
};

/**
 * `measure` and the CPU time process `pid` spent meanwhile, per unit of work (`count(result)`: requests or
 * streams served), in µs. The process serving the load (simulator, bare proxy or gateway) is measured alone; the
 * load generator and the other processes are not counted. `cpuMainUs`: the main thread's part (what is left is
 * mostly V8's compiler and GC helper threads: a round that compiles again shows there, session 35). `cpuUserPct`: the
 * share of the process's CPU time in user mode, the rest the kernel's (since session 66: the gateway's extra over the
 * bare proxy is user-space code, and a stretch that slows it more than the kernel's socket work would widen their
 * ratio; docs/PERFORMANCE.md, next steps item 7).
 */
export async function withCpu<T extends object>(pid: number, measure: () => Promise<T>, count: (r: T) => number): Promise<T & { cpuUs: number; cpuMainUs: number; cpuUserPct: number }> {
  const before = cpuUs(pid);
  const mainBefore = mainCpuUs(pid);
  const [userBefore, sysBefore] = userSysTicks(pid);
  const r = await measure();
  const n = Math.max(1, count(r));
  const [user, sys] = userSysTicks(pid);
  const ticks = user - userBefore + (sys - sysBefore);
  return { ...r, cpuUs: Math.round((cpuUs(pid) - before) / n), cpuMainUs: Math.round((mainCpuUs(pid) - mainBefore) / n),
    cpuUserPct: ticks > 0 ? round(((user - userBefore) / ticks) * 100, 1) : 0 };
}

export const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
export const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
/** The median (of an even count, the mean of the middle two). */
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** Rows of cells as aligned columns, two spaces apart. */
export function formatTable(rows: string[][]): string {
  const width = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(width[i])).join('  ')).join('\n');
}

/**
 * The node flags `npm start` gives the gateway (package.json's start script), so the benchmark runs exactly what
 * a user starts.
 */
export const START_FLAGS: string[] = (() => {
  const start = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.start as string;
  const m = /\bnode((?:\s+--[\w-]+(?:=\S+)?)*)\s+dist\/main\.js/.exec(start);
  if (!m) throw new Error(`package.json's start script does not run node … dist/main.js: ${start}`);
  return m[1].trim().split(/\s+/).filter(Boolean);
})();

/**
 * The benchmark's bare pass-through proxy (bench/bare-proxy.ts) in front of `simUrl`, run with `npm start`'s node flags
 * as the gateway is (since session 57; before, with Node's defaults). Under the defaults V8's own memory reducer, which
 * the gateway runs without, collected it 2–5 times in a scratch of bursts with 12 s pauses, and such a collection throws
 * a process's optimised code away (docs/PERFORMANCE.md, session 57): the ceiling was now and then measured re-warming.
 */
export function startBareProxy(simUrl: string, env: Record<string, string> = {}) {
  return startTs('bench/bare-proxy.ts', [simUrl, '0'], env, /(http:\/\/127\.0\.0\.1:\d+)/, { nodeArgs: START_FLAGS });
}

export const dispatcher = new Agent({ connections: 1024, keepAliveTimeout: 30_000, pipelining: 1 });

/** `extra`: more fields (bench/rounds.ts --usage: `stream_options`, as the gateway asks upstream). */
export function chatBody(model: string, stream: boolean, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model, stream, max_tokens: 64, messages: [{ role: 'user', content: 'Say hello to the benchmark.' }], ...extra });
}

/**
 * A long conversation as an agent sends it, about `kb` KB of JSON: a system prompt, eight tools with JSON-schema
 * parameters, then turns of a question, a tool call, its result (code, quotes, newlines, accented letters and an
 * emoji: text that JSON escapes and UTF-8 encodes in more than one byte) and an answer, and the new question last.
 */
export function conversationBody(model: string, stream: boolean, kb = 100): string {
  const tools = Array.from({ length: 8 }, (_, t) => ({
    type: 'function',
    function: {
      name: `tool_${t}`, description: `Looks up record kind ${t} by its id and returns it as JSON.`,
      parameters: { type: 'object', properties: { id: { type: 'string', description: 'The record id.' }, fields: { type: 'array', items: { type: 'string' } }, limit: { type: 'integer', minimum: 1, maximum: 100 } }, required: ['id'] },
    },
  }));
  const messages: unknown[] = [{ role: 'system', content: 'You are a careful assistant for the records team. Answer briefly and cite the record ids you used.\n'.repeat(8) }];
  const result = 'function total(rows) {\n  return rows.reduce((n, r) => n + r["amount"], 0); // "sum" \\ of café rows ☕\n}\n'.repeat(6);
  for (let i = 0; JSON.stringify(messages).length < kb * 1024 - 300; i++) {
    const id = `call_${i.toString().padStart(6, '0')}`;
    messages.push(
      { role: 'user', content: `Question ${i}: which records changed since yesterday, and what does their "total" come to?` },
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: `tool_${i % 8}`, arguments: JSON.stringify({ id: `rec-${i}`, fields: ['amount', 'owner'], limit: 20 }) } }] },
      { role: 'tool', tool_call_id: id, content: result },
      { role: 'assistant', content: `Record rec-${i} changed; its total is ${i * 17} (from the tool's answer).` },
    );
  }
  messages.push({ role: 'user', content: 'Say hello to the benchmark.' });
  return JSON.stringify({ model, stream, max_tokens: 64, tools, messages });
}

/** A vision request: a question and one image as a base64 data URL of about `kb` KB (the body is ~kb KB). */
export function imageBody(model: string, stream: boolean, kb = 2000): string {
  const image = Buffer.alloc(Math.round((kb * 1024 * 3) / 4), 7).toString('base64');
  return JSON.stringify({ model, stream, max_tokens: 64, messages: [
    { role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${image}` } }] },
    { role: 'user', content: 'Say hello to the benchmark.' },
  ] });
}

/** Sequential requests at concurrency 1: latency in ms with sub-millisecond resolution. */
export async function latencyC1(url: string, key: string, n: number, body = chatBody(MODEL, false)): Promise<{ p50: number; p99: number; errors: number }> {
  const times: number[] = [];
  let errors = 0;
  for (let i = 0; i < n + 50; i++) {
    const t0 = process.hrtime.bigint();
    const res = await request(`${url}/v1/chat/completions`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
    await res.body.arrayBuffer();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (res.statusCode !== 200) errors++;
    if (i >= 50) times.push(ms); // the first 50 warm up connections and JIT
  }
  times.sort((a, b) => a - b);
  return { p50: round(pct(times, 50), 3), p99: round(pct(times, 99), 3), errors };
}

export async function throughput(url: string, key: string, connections: number, seconds: number): Promise<{ rps: number; errors: number; p50: number; p99: number; requests: number }> {
  const r = await autocannon({
    url: `${url}/v1/chat/completions`, method: 'POST', connections, duration: seconds,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: chatBody(MODEL, false),
  });
  return { rps: Math.round(r.requests.average), errors: r.errors + r.non2xx + r.timeouts, p50: r.latency.p50, p99: r.latency.p99, requests: r.requests.total };
}

/**
 * Requests one at a time, taking turns between targets (A B, B A, A B, …): each target's latencies (a stream's time
 * to its first body byte too) and its serving process's CPU per request, over the same seconds. Two builds measured
 * in rounds of their own see the machine drift between the rounds (session 20: a 40 µs change was not resolved);
 * taking turns request by request, the drift falls on both alike (`npm run bench:ab -- --interleaved`, session 25).
 * The first `warm` turns are not timed; CPU counts them all.
 */
export async function alternate(targets: Array<{ url: string; key: string; pid: number }>, n: number, body: string, warm = 50) {
  const total: number[][] = targets.map(() => []);
  const ttfb: number[][] = targets.map(() => []);
  const errors = targets.map(() => 0);
  const cpu0 = targets.map((t) => cpuUs(t.pid));
  for (let i = 0; i < n + warm; i++) {
    const order = i % 2 ? [...targets.keys()].reverse() : [...targets.keys()];
    for (const k of order) {
      const t0 = process.hrtime.bigint();
      const res = await request(`${targets[k].url}/v1/chat/completions`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', authorization: `Bearer ${targets[k].key}` }, body });
      let first = 0;
      let text = '';
      for await (const chunk of res.body) {
        if (!first) first = Number(process.hrtime.bigint() - t0) / 1e6;
        text += chunk;
      }
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (res.statusCode !== 200 || (text.startsWith('data:') && !text.includes('[DONE]'))) errors[k]++;
      if (i >= warm) {
        total[k].push(ms);
        ttfb[k].push(first);
      }
    }
  }
  return targets.map((t, k) => {
    const cpu = Math.round((cpuUs(t.pid) - cpu0[k]) / (n + warm));
    const tt = total[k].sort((a, b) => a - b);
    const tf = ttfb[k].sort((a, b) => a - b);
    return { p50: round(pct(tt, 50), 3), p99: round(pct(tt, 99), 3), ttfbP50: round(pct(tf, 50), 3), errors: errors[k], cpuUs: cpu };
  });
}

/** One chat completion through `url` with `body`, read to its end; throws unless it answered 200. */
export async function chatOnce(url: string, key: string, body: string): Promise<void> {
  const res = await request(`${url}/v1/chat/completions`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
  await res.body.arrayBuffer();
  if (res.statusCode !== 200) throw new Error(`${url}: status ${res.statusCode}`);
}

/** Worker `i` of `concurrency` waits i·spreadMs/concurrency ms before its first request (none when `spreadMs` is 0). */
export async function spreadStart(i: number, concurrency: number, spreadMs: number): Promise<void> {
  if (spreadMs > 0 && i > 0) await new Promise((r) => setTimeout(r, (i * spreadMs) / concurrency));
}

/**
 * Streams at a fixed concurrency: time to first body byte and total, per request. `spreadMs`: the workers' first
 * requests are spread evenly over that long (worker i starts i·spreadMs/concurrency ms late) instead of all at
 * once. Each worker's next request follows its last stream, so streams started together stay together only as long
 * as their lengths agree: a paced stream ends with its last chunk, and the workers' starts drift apart by the
 * differences, stream after stream. In `npm run bench:timeline -- --together` (session 50, two runs) a round's first
 * wave of 16 paced requests was made within 0.3–1.4 ms, its 2nd to 5th within 9–20 ms and the later ones within
 * 15–31 ms (medians; the simulator straight drifting least): after the first waves the 16 arrive one every 1–2 ms, not
 * within the same millisecond as session 9 had it. `pauseMs`: each worker waits that long (a timer) before each of its
 * requests, as a client that is not sending back to back does (bench/timeline.ts `--pause-ms`; session 68).
 */
export async function streaming(url: string, key: string, concurrency: number, total: number, model = STREAM_MODEL, spreadMs = 0, body = chatBody(model, true),
  pauseMs = 0) {
  const ttfb: number[] = [];
  const full: number[] = [];
  let errors = 0;
  let next = 0;
  async function worker(i: number) {
    await spreadStart(i, concurrency, spreadMs);
    while (next < total) {
      next++;
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      const t0 = process.hrtime.bigint();
      const res = await request(`${url}/v1/chat/completions`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
      let first = true;
      let text = '';
      for await (const chunk of res.body) {
        if (first) { ttfb.push(Number(process.hrtime.bigint() - t0) / 1e6); first = false; }
        text += chunk;
      }
      full.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (res.statusCode !== 200 || !text.includes('[DONE]')) errors++;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, (_, i) => worker(i)));
  ttfb.sort((a, b) => a - b);
  full.sort((a, b) => a - b);
  return { ttfbP50: round(pct(ttfb, 50), 3), ttfbP99: round(pct(ttfb, 99), 3), totalP50: round(pct(full, 50), 3), errors, streams: full.length };
}

/**
 * The benchmark's streamed measures (streams a measure: the burst's, the paced ones', one at a time) and what leads
 * each loaded measure in, uncounted (since session 35: c=64 seconds, a quarter of each streamed measure); bench/run.ts
 * and bench/rounds.ts run the same. `warm`: the warm-up's burst streams and streams one at a time (warmStreams).
 */
export function streamSizes(quick: boolean) {
  const streams = quick ? 200 : 400;
  const paced = quick ? 96 : 320; // ~0.2 s each, 16 at a time
  const single = quick ? 100 : 400; // one at a time, ~1-2 ms each
  const lead = { c64: quick ? 0.5 : 1, streams: Math.round(streams / 4), paced: Math.round(paced / 4), single: Math.round(single / 4) };
  const warm = { streams: quick ? 1000 : WARM_STREAMS, single: quick ? 200 : 1000 };
  return { streams, paced, single, lead, warm };
}

/**
 * Burst streams that bring a fresh gateway's stream path to its steady state, in the warm-up of every tool that
 * times streams (since session 46; 400 in bench/run.ts and 200 in bench/ab.ts before). V8 optimises a function once
 * it has run enough, and a stream runs many functions a few times each: on a fresh gateway the CPU a burst stream took
 * fell by batches of 400 from 1,025 µs to 700, 650, 475, 425, 375, 325 and ~250 from the 2,800th stream on, and V8
 * still marked ~7 functions for optimisation in the 250 streams up to the 3,000th (`--trace-opt`). With 400 the
 * benchmark's first rounds timed the gateway's burst while it compiled (run DK: 210, 286 and 164 µs a stream on its
 * main thread in its three rounds), and bench:ab, whose rounds start fresh gateways, timed every round so. The bare proxy and the
 * simulator, which run far less code, get the same warm-up.
 */
export const WARM_STREAMS = 3000;

/**
 * The benchmark's streamed measures, in its order (a round runs each on every target, led in by `lead` uncounted
 * streams of itself): the burst, the 16 paced streams started together, the same with their starts spread over one
 * stream's length, and one stream at a time; `name` is the key of bench/results/latest.json. bench/run.ts and
 * bench/rounds.ts run these.
 */
export function streamedMeasures(sizes: ReturnType<typeof streamSizes>) {
  const { lead } = sizes;
  return [
    { name: 'stream', concurrency: 16, total: sizes.streams, lead: lead.streams, model: STREAM_MODEL, spreadMs: 0 },
    { name: 'paced', concurrency: 16, total: sizes.paced, lead: lead.paced, model: PACED_MODEL, spreadMs: 0 },
    { name: 'pacedSpread', concurrency: 16, total: sizes.paced, lead: lead.paced, model: PACED_MODEL, spreadMs: PACED_STREAM_MS },
    { name: 'single', concurrency: 1, total: sizes.single, lead: lead.single, model: STREAM_MODEL, spreadMs: 0 },
  ] as const;
}

/**
 * The warm-up's large bodies (after its c=64 load, before its streams): the 100 KB conversation and the 2 MB vision
 * request one at a time, as each round measures them first. Until session 46 they were not warmed and the first round
 * met them cold; its burst then took 256 and 258 µs of the gateway's main thread a stream in two runs of `npm run
 * bench:rounds` (later rounds 158–201), and 171 with them warmed. Why is not known: `--trace` showed no more compiling
 * or collecting during that burst than in the later ones.
 */
export async function warmBodies(url: string, key: string, large: string, image: string, quick: boolean): Promise<void> {
  await latencyC1(url, key, quick ? 20 : 100, large);
  await latencyC1(url, key, quick ? 10 : 30, image);
}

/**
 * The warm-up's streamed part (after its c=64 load): every streamed path before a round times it, the burst's and the
 * one at a time's until V8 has compiled them (WARM_STREAMS).
 */
export async function warmStreams(url: string, key: string, sizes: ReturnType<typeof streamSizes>): Promise<void> {
  await streaming(url, key, 16, sizes.warm.streams);
  await streaming(url, key, 16, sizes.paced / 2, PACED_MODEL);
  await streaming(url, key, 1, sizes.warm.single);
}

/**
 * `npm run bench`'s warm-up of one target: c=64 for 8 s (3 with `quick`), then, unless `c64Only` (bench:rounds'
 * `--no-lead`, the warm-up before session 35), the large bodies and every streamed path (warmBodies, warmStreams).
 */
export async function warmTarget(url: string, key: string, quick: boolean, c64Only = false): Promise<void> {
  await throughput(url, key, 64, quick ? 3 : 8);
  if (c64Only) return;
  await warmBodies(url, key, conversationBody(MODEL, false, 100), imageBody(MODEL, false), quick);
  await warmStreams(url, key, streamSizes(quick));
}

/** Opens `n` streams that stay open upstream (slow first byte) and samples the gateway's RSS at the peak. */
export async function openStreams(url: string, key: string, pid: number, n: number, idleRss: number) {
  const before = rssOf(pid);
  const ac = new AbortController();
  setMaxListeners(n + 10, ac.signal); // one abort listener per request on the shared signal
  const body = chatBody('sim/slow-4000ms', true);
  let opened = 0;
  const reqs = Array.from({ length: n }, () => request(`${url}/v1/chat/completions`, { method: 'POST', dispatcher, signal: ac.signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body }).then(async (r) => { opened++; for await (const _ of r.body) { /* drain */ } }).catch(() => undefined));
  let peak = before;
  const t0 = Date.now();
  while (Date.now() - t0 < 3500) {
    peak = Math.max(peak, rssOf(pid));
    await new Promise((r) => setTimeout(r, 50));
  }
  await Promise.all(reqs);
  // Per stream: the growth over the RSS just before the streams opened.
  return { idleMb: round(idleRss / 2 ** 20, 1), beforeMb: round(before / 2 ** 20, 1), peakMb: round(peak / 2 ** 20, 1), perStreamKb: round((peak - before) / n / 1024, 1), completed: opened };
}

/**
 * `concurrency` clients sending `body` back to back for `seconds` (a load of large bodies, for the memory it leaves
 * behind): requests, non-200 answers and the serving process's peak RSS, sampled after every answer.
 */
export async function bodyLoad(url: string, key: string, pid: number, body: string, concurrency: number, seconds: number): Promise<{ requests: number; errors: number; peakMb: number }> {
  const end = Date.now() + seconds * 1000;
  let requests = 0;
  let errors = 0;
  let peak = rssOf(pid);
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) {
      const r = await request(`${url}/v1/chat/completions`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
      await r.body.arrayBuffer();
      requests++;
      if (r.statusCode !== 200) errors++;
      peak = Math.max(peak, rssOf(pid));
    }
  }));
  return { requests, errors, peakMb: round(peak / 2 ** 20, 1) };
}

/**
 * The RSS of a process left without traffic for `secs`: sampled every second, the last sample, the RSS when the
 * quiet began, and after how many seconds the RSS first came within 5 % of the last sample (when V8's memory
 * reducer gave the heap back).
 */
export async function settleRss(pid: number, secs: number): Promise<{ settledMb: number; quietStartMb: number; settledAfterS: number }> {
  const samples = [rssOf(pid)];
  for (let i = 0; i < secs; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    samples.push(rssOf(pid));
  }
  const last = samples[samples.length - 1];
  let after = samples.length - 1;
  while (after > 0 && samples[after - 1] <= last * 1.05) after--;
  return { settledMb: round(last / 2 ** 20, 1), quietStartMb: round(samples[0] / 2 ** 20, 1), settledAfterS: after };
}

/**
 * Starts the gateway (`file`: dist/main.js, what `npm start` runs, unless another build is compared with it) with a
 * funded key; `nodeArgs` e.g. `--cpu-prof`. `keysRoot`: the checkout whose scripts/keys.ts makes the key (and so
 * migrates the new database): the build's own, since a build refuses a database migrated by a newer one.
 */
export async function benchGateway(label: string, env: Record<string, string>, simUrl: string, nodeArgs: string[] = [], file = 'dist/main.js', keysRoot = ROOT,
  /** `wrap`: a command the gateway runs under (bench/instructions.ts: valgrind), `startS`: how long it may take to answer. */
  opts: { wrap?: string[]; startS?: number } = {}) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-bench-'));
  const baseEnv = {
    DATA_DIR: dataDir, LOG_LEVEL: 'warn', OPENAI_API_KEY: 'sim-key', OPENAI_BASE_URL: `${simUrl}/v1`,
    HEALTH_MONITOR: 'off', RATE_LIMIT_RPM: '100000000', RATE_LIMIT_TPM: '100000000000', RATE_LIMIT_CONCURRENT: '100000', ...env,
  };
  log(`${label}: creating a funded key`);
  const key = (await runTs('scripts/keys.ts', ['create', '--name', 'bench', '--credits', '1000000'], { ...baseEnv, LOG_LEVEL: 'silent' }, keysRoot)).split('\n').pop()!;
  log(`${label}: starting the gateway`);
  const port = await freePort();
  const command = [...(opts.wrap ?? []), process.execPath, ...START_FLAGS, ...nodeArgs, path.resolve(ROOT, file)];
  const child = spawn(command[0], command.slice(1), { cwd: ROOT, env: { ...process.env, ...baseEnv, HOST: '127.0.0.1', PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  const gw = { child };
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const ok = await request(`${url}/health`, { dispatcher }).then((r) => r.body.text().then(() => r.statusCode === 200), () => false);
    if (ok) break;
    if (i > (opts.startS ?? 30) * 10) throw new Error('gateway did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  // The model must be known to the catalog (discovered from the simulator's model list).
  for (let i = 0; i < 100; i++) {
    const r = await request(`${url}/v1/chat/completions`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: chatBody(MODEL, false) });
    const text = await r.body.text();
    if (r.statusCode === 200) break;
    if (i === 99) throw new Error(`gateway never served ${MODEL}: ${r.statusCode} ${text}`);
    await new Promise((res) => setTimeout(res, 200));
  }
  // Idle: started, catalog loaded, one request served, nothing in flight.
  await new Promise((r) => setTimeout(r, 500));
  const idleRss = rssOf(gw.child.pid!);
  return { url, key, pid: gw.child.pid!, child, idleRss, stop: () => gw.child.kill('SIGTERM') };
}

/** A gateway build to measure: its bundle, and the checkout it came from. */
export interface Build { label: string; file: string; root: string; cleanup?: () => void }

const git = (...args: string[]) => execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' }).trim();

/** Bundles src/main.ts of `root` as package.json's build script does, into `outfile`. */
export function bundle(root: string, outfile: string): void {
  const esbuild = createRequire(path.join(ROOT, 'package.json')).resolve('esbuild/bin/esbuild');
  execFileSync(esbuild, ['src/main.ts', '--bundle', '--platform=node', '--packages=external', '--format=esm',
    '--target=node20', `--outfile=${outfile}`, '--log-level=warning'], { cwd: root, stdio: 'inherit' });
}

/**
 * A revision checked out in a temporary worktree (node_modules shared), or the working tree itself (bundled into
 * bench/results/<tool>/worktree.js).
 */
export function build(rev: string | undefined, tool = 'ab'): Build {
  if (rev === undefined) {
    const file = path.join(ROOT, `bench/results/${tool}/worktree.js`);
    bundle(ROOT, file);
    return { label: 'working tree', file, root: ROOT };
  }
  const sha = git('rev-parse', '--verify', `${rev}^{commit}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `gw-${tool}-${sha.slice(0, 7)}-`));
  git('worktree', 'add', '--detach', '--force', dir, sha);
  const cleanup = () => git('worktree', 'remove', '--force', dir);
  try {
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    const file = path.join(dir, 'dist/main.js');
    bundle(dir, file);
    return { label: `${rev} (${sha.slice(0, 7)})`, file, root: dir, cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}
