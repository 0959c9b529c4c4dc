/**
 * npm run bench: the gateway's own cost, measured against the upstream simulator on loopback.
 *
 * Starts the simulator, a bare pass-through proxy (the ceiling) and the gateway (embedded SQLite, then
 * PostgreSQL when reachable) as separate processes with a funded key, and measures:
 *   1. non-streaming chat at concurrency 1: p50/p99 latency direct, via the bare proxy, via the gateway;
 *   2. non-streaming chat at concurrency 64: requests per second and errors (autocannon);
 *   3. streaming chat (20 chunks) at concurrency 16: time to first byte and total;
 *   4. 1,000 concurrent open streams: the gateway's peak RSS and RSS per stream.
 * Prints one table and writes bench/results/latest.json. Bounded in time and count; loopback only.
 * Flags: --quick (shorter runs), --no-postgres.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Agent, request } from 'undici';
import pg from 'pg';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const QUICK = process.argv.includes('--quick');
const WITH_PG = !process.argv.includes('--no-postgres');
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const MODEL = 'sim/echo';
const STREAM_MODEL = 'sim/chunks-20';
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

const children: ChildProcess[] = [];
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });

function startTs(script: string, args: string[], env: Record<string, string>, ready: RegExp): Promise<{ child: ChildProcess; out: () => string; match: RegExpMatchArray }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], { cwd: ROOT, env: { ...process.env, ...env } });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${script} did not start:\n${out}`)), 30_000);
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

function runTs(script: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (err += d));
    c.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`${script} ${args.join(' ')}: ${err}`))));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const rssOf = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
};

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

const dispatcher = new Agent({ connections: 1024, keepAliveTimeout: 30_000, pipelining: 1 });

function chatBody(model: string, stream: boolean): string {
  return JSON.stringify({ model, stream, max_tokens: 64, messages: [{ role: 'user', content: 'Say hello to the benchmark.' }] });
}

/** Sequential requests at concurrency 1: latency in ms with sub-millisecond resolution. */
async function latencyC1(url: string, key: string, n: number): Promise<{ p50: number; p99: number; errors: number }> {
  const times: number[] = [];
  let errors = 0;
  const body = chatBody(MODEL, false);
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

async function throughput(url: string, key: string, connections: number, seconds: number): Promise<{ rps: number; errors: number; p50: number; p99: number }> {
  const r = await autocannon({
    url: `${url}/v1/chat/completions`, method: 'POST', connections, duration: seconds,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: chatBody(MODEL, false),
  });
  return { rps: Math.round(r.requests.average), errors: r.errors + r.non2xx + r.timeouts, p50: r.latency.p50, p99: r.latency.p99 };
}

/** Streams at a fixed concurrency: time to first body byte and total, per request. */
async function streaming(url: string, key: string, concurrency: number, total: number) {
  const ttfb: number[] = [];
  const full: number[] = [];
  let errors = 0;
  let next = 0;
  const body = chatBody(STREAM_MODEL, true);
  async function worker() {
    while (next < total) {
      next++;
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
  await Promise.all(Array.from({ length: concurrency }, worker));
  ttfb.sort((a, b) => a - b);
  full.sort((a, b) => a - b);
  return { ttfbP50: round(pct(ttfb, 50), 3), ttfbP99: round(pct(ttfb, 99), 3), totalP50: round(pct(full, 50), 3), errors };
}

/** Opens `n` streams that stay open upstream (slow first byte) and samples the gateway's RSS at the peak. */
async function openStreams(url: string, key: string, pid: number, n: number, idleRss: number) {
  const before = rssOf(pid);
  const ac = new AbortController();
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
  // Per stream: the growth over the RSS just before the streams opened (after the load phases, so warm).
  return { idleMb: round(idleRss / 2 ** 20, 1), beforeMb: round(before / 2 ** 20, 1), peakMb: round(peak / 2 ** 20, 1), perStreamKb: round((peak - before) / n / 1024, 1), completed: opened };
}

async function benchGateway(label: string, env: Record<string, string>, simUrl: string) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-bench-'));
  const baseEnv = {
    DATA_DIR: dataDir, LOG_LEVEL: 'warn', OPENAI_API_KEY: 'sim-key', OPENAI_BASE_URL: `${simUrl}/v1`,
    HEALTH_MONITOR: 'off', RATE_LIMIT_RPM: '100000000', RATE_LIMIT_TPM: '100000000000', RATE_LIMIT_CONCURRENT: '100000', ...env,
  };
  log(`${label}: creating a funded key`);
  const key = (await runTs('scripts/keys.ts', ['create', '--name', 'bench', '--credits', '1000000'], { ...baseEnv, LOG_LEVEL: 'silent' })).split('\n').pop()!;
  log(`${label}: starting the gateway`);
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/main.js')], { cwd: ROOT, env: { ...process.env, ...baseEnv, HOST: '127.0.0.1', PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  const gw = { child };
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const ok = await request(`${url}/health`, { dispatcher }).then((r) => r.body.text().then(() => r.statusCode === 200), () => false);
    if (ok) break;
    if (i > 300) throw new Error('gateway did not start');
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
  return { url, key, pid: gw.child.pid!, idleRss, stop: () => gw.child.kill('SIGTERM') };
}

async function main() {
  const n1 = QUICK ? 300 : 2000;
  const secs = QUICK ? 4 : 10;
  const streams = QUICK ? 200 : 800;
  const open = QUICK ? 300 : 1000;
  log('building dist/main.js (what npm start runs)');
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  log('starting the upstream simulator and the bare proxy');
  const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
  const simUrl = sim.match[1];
  const bare = await startTs('bench/bare-proxy.ts', [simUrl, '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
  const bareUrl = bare.match[1];

  const results: Record<string, any> = { date: new Date().toISOString(), cpus: os.cpus().length, node: process.version, quick: QUICK };
  log('direct and bare proxy: concurrency 1');
  results.direct = { c1: await latencyC1(simUrl, 'sim-key', n1) };
  results.bare = { c1: await latencyC1(bareUrl, 'x', n1) };
  log('direct and bare proxy: concurrency 64');
  results.direct.c64 = await throughput(simUrl, 'sim-key', 64, secs);
  results.bare.c64 = await throughput(bareUrl, 'x', 64, secs);
  log('direct and bare proxy: streaming');
  results.direct.stream = await streaming(simUrl, 'sim-key', 16, streams);
  results.bare.stream = await streaming(bareUrl, 'x', 16, streams);

  const dbs: Array<[string, Record<string, string>]> = [['sqlite', {}]];
  if (WITH_PG) {
    const ok = await new pg.Client({ connectionString: PG_URL }).connect().then(() => true, () => false);
    if (ok) dbs.push(['postgres', { DATABASE_URL: PG_URL }]);
    else log(`PostgreSQL at ${PG_URL} unreachable: its run is skipped`);
  }
  for (const [label, env] of dbs) {
    const gw = await benchGateway(label, env, simUrl);
    const r: Record<string, any> = {};
    log(`${label}: concurrency 1`);
    r.c1 = await latencyC1(gw.url, gw.key, n1);
    log(`${label}: concurrency 64`);
    r.c64 = await throughput(gw.url, gw.key, 64, secs);
    log(`${label}: streaming`);
    r.stream = await streaming(gw.url, gw.key, 16, streams);
    log(`${label}: ${open} open streams`);
    r.memory = await openStreams(gw.url, gw.key, gw.pid, open, gw.idleRss);
    gw.stop();
    results[label] = r;
  }
  sim.child.kill('SIGTERM');
  bare.child.kill('SIGTERM');

  const rows: string[][] = [['measure', 'direct', 'bare proxy', ...dbs.map(([l]) => `gateway (${l})`)]];
  const add = (name: string, f: (x: any) => string) => rows.push([name, f(results.direct), f(results.bare), ...dbs.map(([l]) => f(results[l]))]);
  add('c=1 p50 ms', (x) => String(x.c1.p50));
  add('c=1 p99 ms', (x) => String(x.c1.p99));
  add('c=64 req/s', (x) => String(x.c64.rps));
  add('c=64 errors', (x) => String(x.c64.errors));
  add('stream TTFB p50 ms', (x) => String(x.stream.ttfbP50));
  add('stream total p50 ms', (x) => String(x.stream.totalP50));
  add('stream errors', (x) => String(x.stream.errors));
  const derived: Record<string, any> = {};
  for (const [l] of dbs) {
    const g = results[l];
    derived[l] = {
      added_p50_ms: round(g.c1.p50 - results.direct.c1.p50, 3),
      added_p99_ms: round(g.c1.p99 - results.direct.c1.p99, 3),
      bare_added_p50_ms: round(results.bare.c1.p50 - results.direct.c1.p50, 3),
      throughput_vs_bare: round(g.c64.rps / results.bare.c64.rps, 3),
      added_ttfb_p50_ms: round(g.stream.ttfbP50 - results.direct.stream.ttfbP50, 3),
      idle_rss_mb: g.memory.idleMb, rss_before_streams_mb: g.memory.beforeMb, peak_rss_mb: g.memory.peakMb, rss_per_stream_kb: g.memory.perStreamKb,
    };
  }
  results.derived = derived;
  const width = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(width[i])).join('  ');
  console.log(rows.map(line).join('\n'));
  console.log('\nDerived (gateway minus direct; throughput as a share of the bare proxy):');
  for (const [l, d] of Object.entries(derived)) console.log(`  ${l}: ${JSON.stringify(d)}`);
  fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  fs.writeFileSync(path.join(ROOT, 'bench/results/latest.json'), JSON.stringify(results, null, 2));
  log('wrote bench/results/latest.json');
  process.exit(0);
}

main().catch((err) => { console.error(err); process.exit(1); });
