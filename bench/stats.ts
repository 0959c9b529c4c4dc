/**
 * npm run bench:stats -- [--rows 1000000] [--runs 21] [--dialect sqlite|postgres|both] [--fresh]
 *
 * Seeds `--rows` usage records (scripts/seed-usage.ts) into a SQLite file under bench/results/ and a PostgreSQL
 * database of its own (BENCH_DATABASE_URL, default 127.0.0.1:5432/bench, created when missing — never the tests'
 * database), then times every statistics query — and the
 * health and status queries — at the service level: `--runs` runs after one warm-up, median and p90 in ms.
 * A store that already holds `--rows` records is reused (pass --fresh to reseed). Results are printed and written
 * to bench/results/stats-<dialect>.json.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openStore, type Store } from '../src/store/index.js';
import type { DatabaseConfig } from '../src/config.js';
import { UsageStats } from '../src/stats/service.js';
import type { TimeRange } from '../src/stats/window.js';
import { HealthService } from '../src/health/service.js';
import { seed, SEED_GATEWAYS } from '../scripts/seed-usage.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(root, 'bench/results');
const PG_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/bench';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
}
const ROWS = Number(arg('rows', '1000000'));
const RUNS = Number(arg('runs', '21'));
const FRESH = process.argv.includes('--fresh');

async function storeFor(dialect: 'sqlite' | 'postgres'): Promise<Store> {
  if (dialect === 'sqlite') {
    const file = path.join(outDir, `stats-bench-${ROWS}.db`);
    if (FRESH) for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });
    return openStore({ dialect: 'sqlite', file });
  }
  const url = new URL(PG_URL);
  const name = url.pathname.slice(1);
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name in BENCH_DATABASE_URL: ${name}`);
  const admin = new pg.Client({ connectionString: Object.assign(new URL(PG_URL), { pathname: '/postgres' }).toString() });
  await admin.connect();
  try {
    if (FRESH) await admin.query(`drop database if exists ${name}`);
    const exists = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (!exists.rowCount) await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  return openStore({ dialect: 'postgres', url: PG_URL } as DatabaseConfig);
}

interface Result { query: string; median_ms: number; p90_ms: number }

async function time(name: string, fn: () => Promise<unknown>, out: Result[]): Promise<void> {
  await fn(); // warm-up: caches and prepared plans, as a running server has them
  const t: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const a = performance.now();
    await fn();
    t.push(performance.now() - a);
  }
  t.sort((x, y) => x - y);
  const r = { query: name, median_ms: +t[Math.floor(t.length / 2)].toFixed(2), p90_ms: +t[Math.min(t.length - 1, Math.ceil(t.length * 0.9) - 1)].toFixed(2) };
  out.push(r);
  console.log(`  ${name.padEnd(58)} ${r.median_ms.toFixed(1).padStart(8)} ms   p90 ${r.p90_ms.toFixed(1).padStart(8)} ms${r.median_ms >= 100 ? '   OVER 100 ms' : ''}`);
}

async function bench(dialect: 'sqlite' | 'postgres') {
  const store = await storeFor(dialect);
  const have = await store.usage.count();
  if (have !== ROWS) {
    if (have) throw new Error(`${dialect}: the bench store holds ${have} records, not ${ROWS}; run with --fresh`);
    console.log(`${dialect}: seeding ${ROWS} usage records…`);
    await seed(store, { rows: ROWS, days: 40, healthRows: Math.round(ROWS / 5), seed: 42, users: 5000, now: Date.now() }, (s) => console.log(`  ${s}`));
  }
  console.log(`\n${dialect}: ${ROWS} usage records, median of ${RUNS} runs`);
  const directory = { gateways: () => SEED_GATEWAYS.map((id) => ({ id, aliases: [] })) };
  const stats = new UsageStats(store.db, directory);
  const health = new HealthService(store.db, () => false);
  const out: Result[] = [];
  const ranges: TimeRange[] = ['1h', '24h', '7d', '30d', 'all'];
  for (const r of ranges) await time(`getProviderStats openai ${r}`, () => stats.providerStats('openai', null, r), out);
  await time('getProviderStats openai gateway=openrouter 24h', () => stats.providerStats('openai', 'openrouter', '24h'), out);
  for (const r of ranges) await time(`getGatewayStats groq ${r}`, () => stats.gatewayStats('groq', r)!, out);
  for (const r of ranges) await time(`getGatewaysSummary ${r}`, () => stats.gatewaysSummary(r), out);
  for (const r of ranges) await time(`getProviderTopModels openai ${r}`, () => stats.providerTopModels('openai', r, 5, 0), out);
  for (const r of ['1h', '24h', '7d', '30d'] as const) {
    for (const s of ['requests', 'tokens', 'users'] as const) await time(`getTrendingModels ${s} ${r}`, () => stats.trending(null, r, s, 10, 0), out);
  }
  await time('getTrendingModels users 7d gateway=groq', () => stats.trending('groq', '7d', 'users', 10, 0), out);
  console.log('  -- model health and status (health history rows: ' + Math.round(ROWS / 5) + ')');
  await time('listModelHealth (limit 100)', () => health.list(null, null, 100, 0), out);
  await time('getModelHealth openai/model-0', () => health.detail('openai', 'model-0'), out);
  await time('listUnhealthyModels', () => health.unhealthy(0.2, 10), out);
  await time('getModelHealthStats', () => health.stats(), out);
  await time('listHealthProviders', () => health.providers(), out);
  await time('getHealthSummary', () => health.summary(), out);
  await time('status page uptime bars', () => health.uptimeBars(), out);
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, `stats-${dialect}.json`), JSON.stringify({ dialect, rows: ROWS, runs: RUNS, at: new Date().toISOString(), results: out }, null, 2));
  await store.close();
  return out;
}

const which = arg('dialect', 'both');
for (const d of ['sqlite', 'postgres'] as const) if (which === 'both' || which === d) await bench(d);
