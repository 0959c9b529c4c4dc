/**
 * npm run bench:catalog — every catalog query against a synthetic catalog of 20,000 offers (5,000 models on
 * the 16 seeded gateways, measured health on a third of them, a week of usage), over real HTTP on
 * 127.0.0.1 with a keep-alive client, response validation off (as in production). Prints the median and
 * p95 latency per query and the time one catalog rebuild takes. Target: every median under 20 ms.
 *
 * Options: BENCH_OFFERS (default 20000), BENCH_ITERATIONS (default 200).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { openStore } from '../src/store/index.js';
import { KeyService } from '../src/auth.js';
import { buildServices, stopServices } from '../src/services.js';
import { createApp } from '../src/app.js';
import { DEFAULT_SEEDS_DIR, type CatalogOffer } from '../src/catalog/seeds.js';
import type { GatewayInfo } from '../src/catalog/types.js';
import type { HealthObservation } from '../src/store/health.js';

const OFFERS = Number(process.env.BENCH_OFFERS ?? 20_000);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 200);
const FAMILIES = ['llama', 'qwen', 'gpt', 'claude', 'mistral', 'gemma', 'deepseek', 'glm', 'kimi', 'phi', 'coder', 'nemotron'];

/** A deterministic PRNG, so every run measures the same catalog. */
function rng(seed: number) {
  return () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

export function syntheticOffers(gateways: GatewayInfo[], n: number): CatalogOffer[] {
  const rand = rng(42);
  const perModel = 4;
  const out: CatalogOffer[] = [];
  for (let m = 0; out.length < n; m++) {
    const family = FAMILIES[m % FAMILIES.length];
    const developer = `dev-${m % 97}`;
    const model = `${family}-${Math.floor(m / FAMILIES.length)}-${m % 3 === 0 ? 'instruct' : 'chat'}`;
    const ctx = [8192, 32768, 131072, 200000, 1048576][Math.floor(rand() * 5)];
    const base = rand() < 0.05 ? 0 : Number((rand() * 0.00002).toPrecision(6));
    const vision = rand() < 0.3;
    const start = Math.floor(rand() * gateways.length);
    for (let k = 0; k < perModel && out.length < n; k++) {
      const g = gateways[(start + k * 3) % gateways.length];
      const price = base === 0 ? 0 : Number((base * (0.7 + rand() * 0.6)).toPrecision(6));
      out.push({
        gateway: g.id, upstreamModel: `${developer}/${model}`, modelId: `${developer}/${model}`, developer,
        name: `${family.toUpperCase()} ${model}`, family, description: rand() < 0.5 ? `A ${family} model for chat and code.` : null,
        pricing: { prompt: price, completion: price * 4, cacheRead: null, cacheWrite: null, image: null, audioPerMinute: null },
        contextLength: ctx, maxOutputTokens: 8192,
        capabilities: { tools: rand() < 0.6, vision, reasoning: rand() < 0.2, jsonMode: rand() < 0.5, streaming: true },
        modalities: { input: vision ? ['text', 'image'] : ['text'], output: ['text'] },
        openWeights: rand() < 0.5, isPrivate: false, isActive: rand() > 0.05, releaseDate: '2025-01-15',
        qualityScore: rand() < 0.4 ? Math.round(rand() * 1000) / 10 : null,
      });
    }
  }
  return out;
}

async function main() {
  const gateways: GatewayInfo[] = JSON.parse(fs.readFileSync(path.join(DEFAULT_SEEDS_DIR, 'gateways.json'), 'utf8'));
  const offers = syntheticOffers(gateways, OFFERS);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-catalog-'));
  fs.writeFileSync(path.join(dir, 'models.json'), JSON.stringify(offers));
  const env: Record<string, string> = {
    DATA_DIR: dir, KEY_HASH_SECRET: 'bench-secret-0123456789', LOG_LEVEL: 'silent', CATALOG_SEEDS_DIR: dir,
    CATALOG_SYNC_INTERVAL_MS: '0', CATALOG_HEALTH_REFRESH_MS: '0',
  };
  for (const g of gateways) if (!g.keyOptional) env[g.keyEnv] = 'bench-key';
  const config = loadConfig(env);
  const logger = createLogger('silent');
  const store = await openStore(config.database);
  const services = await buildServices(config, store, logger);
  const app = await createApp({ config, store, keys: new KeyService(store.keys, config.keyHashSecret, config.adminApiKey), logger, services });

  // measured health on a third of the offers, usage on a tenth
  const rand = rng(7);
  const now = Date.now();
  const obs: HealthObservation[] = [];
  for (const o of offers) {
    if (rand() > 0.33) continue;
    const ms = Math.round(30 + rand() * 1500);
    obs.push({ gateway: o.gateway, model: o.upstreamModel, provider: o.developer, ok: rand() > 0.05, status: 'success', latencyMs: ms, error: null, ts: now, source: 'passive' });
  }
  for (let i = 0; i < obs.length; i += 1000) await store.health.record(obs.slice(i, i + 1000));
  const usage = offers.filter(() => rand() < 0.1).map((o, i) => ({
    request_id: `b${i}`, endpoint: '/v1/chat/completions', gateway: o.gateway, provider: o.developer, model: o.upstreamModel, status: 'success',
    http_status: 200, prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cost_nano: 0, latency_ms: 0, created_at: now - 1000,
  }));
  await store.usage.insertMany(usage);
  const builds: number[] = [];
  const overlays: number[] = [];
  for (let i = 0; i < 5; i++) {
    services.catalog.rebuild(); // what a sync ends with (no network here: CATALOG_SYNC_INTERVAL_MS=0)
    builds.push(services.catalog.lastBuildMs);
    await services.catalog.refreshHealth();
    overlays.push(services.catalog.lastHealthMs);
  }

  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const agent = new Agent({ keepAliveTimeout: 60_000, connections: 1 });

  const m = offers[1234];
  const ids = Array.from({ length: 10 }, (_, i) => `model_ids=${encodeURIComponent(offers[i * 997].modelId)}`).join('&');
  const queries: Array<[string, string, string]> = [
    ['listRouters', 'GET', '/v1/routers'],
    ['listGateways', 'GET', '/v1/gateways'],
    ['getGatewaysStatus', 'GET', '/v1/gateways/status'],
    ['listProviders', 'GET', '/v1/provider'],
    ['listProviders gateway', 'GET', '/v1/provider?gateway=groq'],
    ['listModels', 'GET', '/v1/models'],
    ['listModels page 150', 'GET', '/v1/models?offset=15000&limit=100'],
    ['listModels unique', 'GET', '/v1/models?unique_models=true'],
    ['listModels provider+gateway', 'GET', `/v1/models?provider=${m.developer}&gateway=together`],
    ['searchModels q', 'GET', '/v1/models/search?q=coder&sort_by=price'],
    ['searchModels ranges', 'GET', '/v1/models/search?min_context=100000&max_price=0.00001&sort_by=popularity&order=desc'],
    ['searchModels modality', 'GET', '/v1/models/search?modality=multimodal&sort_by=name&offset=500'],
    ['listUniqueModels', 'GET', '/v1/models/unique'],
    ['listUniqueModels cheapest', 'GET', '/v1/models/unique?sort_by=cheapest_price&order=asc&min_providers=3'],
    ['byCategory cheapest', 'GET', '/v1/models/by-category/cheapest'],
    ['byCategory long-context', 'GET', '/v1/models/by-category/long-context'],
    ['byCategory balanced', 'GET', '/v1/models/by-category/balanced?limit=100'],
    ['listLowLatencyModels', 'GET', '/v1/models/low-latency'],
    ['batchCompareModels', 'POST', `/v1/models/batch-compare?${ids}&criteria=availability`],
    ['compareModelAcrossGateways', 'GET', `/v1/models/${m.modelId}/compare`],
    ['getModel', 'GET', `/v1/models/${m.modelId}`],
    ['listDeveloperModels', 'GET', `/v1/models/${m.developer}`],
  ];

  const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
  console.log(`catalog: ${services.catalog.snapshot.entries.length} offers, ${services.catalog.snapshot.unique.all.length} models, ${obs.length} with measured health`);
  console.log(`full rebuild after a sync (merge + indexes + sorts): median ${pct(builds, 0.5).toFixed(1)} ms`);
  console.log(`health refresh overlay (in place): median ${pct(overlays, 0.5).toFixed(1)} ms\n`);
  console.log('query'.padEnd(30), 'median ms'.padStart(10), 'p95 ms'.padStart(8), 'bytes'.padStart(9));
  let worst = 0;
  for (const [name, method, url] of queries) {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < ITERATIONS + 20; i++) {
      const t0 = performance.now();
      const res = await request(base + url, { method: method as 'GET', dispatcher: agent });
      const body = await res.body.text();
      const ms = performance.now() - t0;
      if (res.statusCode !== 200) throw new Error(`${name}: HTTP ${res.statusCode} ${body.slice(0, 200)}`);
      bytes = body.length;
      if (i >= 20) times.push(ms);
    }
    const med = pct(times, 0.5);
    worst = Math.max(worst, med);
    console.log(name.padEnd(30), med.toFixed(2).padStart(10), pct(times, 0.95).toFixed(2).padStart(8), String(bytes).padStart(9));
  }
  const resolveTimes: Record<string, number[]> = { 'resolve router:cheapest': [], 'resolve canonical id': [], 'resolve router:fastest/<model>': [] };
  for (let i = 0; i < 1000; i += 1) {
    for (const [k, s] of [['resolve router:cheapest', 'router:cheapest'], ['resolve canonical id', m.modelId], ['resolve router:fastest/<model>', `router:fastest/${m.modelId}`]]) {
      const t0 = performance.now();
      services.catalog.resolve(s);
      resolveTimes[k].push(performance.now() - t0);
    }
  }
  for (const [k, xs] of Object.entries(resolveTimes)) console.log(k.padEnd(30), pct(xs, 0.5).toFixed(3).padStart(10), pct(xs, 0.95).toFixed(3).padStart(8), '(in process)');
  console.log(`\nslowest median: ${worst.toFixed(2)} ms (target < 20 ms) — ${worst < 20 ? 'OK' : 'OVER TARGET'}`);

  server.close();
  await agent.close();
  await stopServices(services);
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
