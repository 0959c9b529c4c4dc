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
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ROOT, benchGateway, latencyC1, log, openStreams, round, startTs, streaming, throughput } from './lib.js';

const QUICK = process.argv.includes('--quick');
const WITH_PG = !process.argv.includes('--no-postgres');
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

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
