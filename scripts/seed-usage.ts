/**
 * npm run seed:usage -- [--rows 1000000] [--days 40] [--health-rows 200000] [--seed 42]
 *
 * Fills the configured database (DATABASE_URL, or the embedded SQLite under DATA_DIR) with synthetic usage
 * records and health observations, for the statistics benchmark (bench/stats.ts) and for demos. The traffic is
 * deterministic for a seed and shaped like real traffic: popularity of models, gateways and users is skewed
 * (a few keys and models carry most requests), most requests succeed, a share of them stream, and newer days
 * are busier. Rollups are rebuilt from the raw rows afterwards, exactly as migration 0002 does on an upgrade.
 */
import { sql } from 'kysely';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { openStore, type Store } from '../src/store/index.js';
import type { UsageRecord } from '../src/store/usage.js';
import type { HealthObservation } from '../src/store/health.js';

export const SEED_GATEWAYS = ['openrouter', 'openai', 'anthropic', 'together', 'groq', 'fireworks', 'deepinfra', 'google', 'cerebras', 'xai'];
const DEVELOPERS = ['openai', 'anthropic', 'meta-llama', 'google', 'mistralai', 'qwen', 'deepseek', 'x-ai', 'cohere', 'microsoft',
  'nvidia', 'moonshotai', 'z-ai', 'ibm-granite', 'nousresearch'];
const STATUSES: Array<[string, number]> = [['success', 0.93], ['error', 0.03], ['timeout', 0.015], ['rate_limited', 0.02], ['cancelled', 0.005]];

/** mulberry32: a tiny deterministic PRNG, so two runs with one seed produce the same rows. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Index drawn with weight 1/(i+1)^s (Zipf-like), from a precomputed cumulative table. */
function zipf(n: number, s: number): (r: number) => number {
  const cum: number[] = [];
  let total = 0;
  for (let i = 0; i < n; i++) cum.push((total += 1 / Math.pow(i + 1, s)));
  return (r) => {
    const x = r * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
  };
}

export interface SeedModel { model: string; provider: string; gateways: string[]; pricePrompt: number; priceCompletion: number; baseLatency: number }

export function seedModels(rand: () => number, count = 60): SeedModel[] {
  const out: SeedModel[] = [];
  for (let i = 0; i < count; i++) {
    const provider = DEVELOPERS[i % DEVELOPERS.length];
    const nGw = 1 + Math.floor(rand() * 3);
    const gws = new Set<string>();
    while (gws.size < nGw) gws.add(SEED_GATEWAYS[Math.floor(rand() * SEED_GATEWAYS.length)]);
    out.push({
      model: `${provider}/model-${i}`, provider, gateways: [...gws].sort(),
      pricePrompt: Math.round(50 + rand() * 3000), priceCompletion: Math.round(200 + rand() * 12000), // nano-USD per token
      baseLatency: 200 + Math.floor(rand() * 2500),
    });
  }
  return out;
}

function pick<T>(rand: () => number, table: Array<[T, number]>): T {
  let r = rand();
  for (const [v, p] of table) if ((r -= p) < 0) return v;
  return table[table.length - 1][0];
}

export interface SeedOptions { rows: number; days: number; healthRows: number; seed: number; users: number; now: number }

/** Usage records in batches of `batch`, oldest first within each batch's random draw. */
export function* usageBatches(o: SeedOptions, batch = 5000): Generator<UsageRecord[]> {
  const rand = rng(o.seed);
  const models = seedModels(rand);
  const pickModel = zipf(models.length, 1.05);
  const pickUser = zipf(o.users, 1.1);
  const span = o.days * 86_400_000;
  for (let done = 0; done < o.rows; done += batch) {
    const out: UsageRecord[] = [];
    for (let i = 0; i < Math.min(batch, o.rows - done); i++) {
      const m = models[pickModel(rand())];
      const gateway = m.gateways[Math.floor(rand() * m.gateways.length)];
      // Oldest first, as a live gateway writes them; sqrt makes newer days busier.
      const age = Math.floor((1 - Math.sqrt((done + i + rand()) / o.rows)) * span);
      const status = pick(rand, STATUSES);
      const ok = status === 'success';
      const streamed = rand() < 0.6;
      const prompt = ok || status === 'cancelled' ? 20 + Math.floor(rand() * 3000) : 0;
      const completion = ok ? 1 + Math.floor(rand() * 800) : status === 'cancelled' ? Math.floor(rand() * 50) : 0;
      const latency = Math.max(5, Math.round(m.baseLatency * Math.exp((rand() - 0.5) * 1.5) + completion * 8));
      const user = pickUser(rand()) + 1;
      out.push({
        request_id: `seed-${o.seed}-${done + i}`, user_id: user, key_id: user, endpoint: streamed ? 'chat.stream' : 'chat',
        gateway, provider: m.provider, model: m.model, status, error_class: ok ? null : status,
        http_status: ok ? 200 : status === 'rate_limited' ? 429 : status === 'timeout' ? 504 : status === 'cancelled' ? 499 : 502,
        prompt_tokens: prompt, completion_tokens: completion, cached_tokens: 0,
        cost_nano: prompt * m.pricePrompt + completion * m.priceCompletion, latency_ms: latency,
        ttft_ms: streamed && (ok || status === 'cancelled') ? Math.max(1, Math.floor(latency * (0.05 + rand() * 0.25))) : null,
        created_at: o.now - age,
      });
    }
    yield out;
  }
}

/** Health observations (passive and probe) over the last 30 days for the seeded (gateway, model) pairs. */
export function* healthBatches(o: SeedOptions, batch = 5000): Generator<HealthObservation[]> {
  const rand = rng(o.seed + 1);
  const models = seedModels(rng(o.seed));
  const pairs = models.flatMap((m) => m.gateways.map((g) => ({ ...m, gateway: g })));
  const pickPair = zipf(pairs.length, 1.0);
  const span = 30 * 86_400_000;
  for (let done = 0; done < o.healthRows; done += batch) {
    const out: HealthObservation[] = [];
    for (let i = 0; i < Math.min(batch, o.healthRows - done); i++) {
      const p = pairs[pickPair(rand())];
      const status = pick(rand, STATUSES.filter(([s]) => s !== 'cancelled'));
      out.push({
        gateway: p.gateway, model: p.model, provider: p.provider, ok: status === 'success', status,
        latencyMs: status === 'timeout' ? null : Math.round(p.baseLatency * Math.exp((rand() - 0.5) * 1.5)),
        error: status === 'success' ? null : `upstream ${status}`, ts: o.now - Math.floor((1 - Math.sqrt((done + i + rand()) / o.healthRows)) * span),
        source: rand() < 0.1 ? 'probe' : 'passive',
      });
    }
    yield out;
  }
}

export async function seed(store: Store, o: SeedOptions, log: (s: string) => void = console.log): Promise<void> {
  const t0 = Date.now();
  let n = 0;
  for (const b of usageBatches(o)) {
    await store.usage.insertRaw(b);
    n += b.length;
    if (n % 200_000 === 0) log(`  usage: ${n} rows (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  await store.usage.rebuildRollups();
  log(`usage: ${o.rows} rows and rollups in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const t1 = Date.now();
  for (const b of healthBatches(o)) await store.health.record(b);
  log(`health: ${o.healthRows} observations in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
  if (store.dialect === 'postgres') await sql`vacuum analyze`.execute(store.db);
  else await sql`analyze`.execute(store.db);
}

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const config = loadConfig();
  const store = await openStore(config.database);
  const opts: SeedOptions = {
    rows: arg('rows', 1_000_000), days: arg('days', 40), healthRows: arg('health-rows', 200_000),
    seed: arg('seed', 42), users: arg('users', 5000), now: Date.now(),
  };
  console.log(`seeding ${config.database.dialect}: ${JSON.stringify(opts)}`);
  await seed(store, opts);
  await store.close();
}
