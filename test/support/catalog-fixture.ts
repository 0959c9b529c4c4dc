/** The fixture catalog (test/fixtures/catalog) and the measured health and usage the catalog tests assume. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HealthObservation } from '../../src/store/health.js';
import type { TestGateway } from './app.js';

export const FIXTURE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/catalog');

/** Fixture seeds; openai, openrouter, groq and together configured, anthropic, google and local not. */
export const FIXTURE_ENV: Record<string, string> = {
  CATALOG_SEEDS_DIR: FIXTURE_DIR,
  CATALOG_HEALTH_REFRESH_MS: '0',
  OPENAI_API_KEY: 'sk-test-openai',
  OPENROUTER_API_KEY: 'sk-test-openrouter',
  GROQ_API_KEY: 'gsk-test',
  TOGETHER_API_KEY: 'tg-test',
};

/**
 * Per offer, the calls recorded (latency in ms, null for a failure without one), in order:
 * - groq llama: 80, 90, 100, 90 → 90 ms average, healthy (recorded under the upstream id);
 * - together llama: 600, 800 → 700 ms, healthy (recorded under the canonical id);
 * - openai gpt-4o: 600, 700, 800 → 700 ms, healthy;
 * - openrouter gpt-4o: 200, then a failure → 100 ms over 2 calls, degraded (a failure in a row);
 * - anthropic claude-sonnet: three failures of 1000 ms → 1000 ms, unhealthy;
 * - openai gpt-4o-mini: 40, 60 → 50 ms, healthy.
 * Usage: 3 requests for the llama model (groq), 1 for gpt-4o (openai) in the last 7 days.
 */
export async function recordFixtureHealth(gw: TestGateway): Promise<void> {
  const now = Date.now();
  const obs: HealthObservation[] = [];
  const add = (gateway: string, model: string, provider: string, calls: Array<number | null>, ok = true) => {
    for (const ms of calls) obs.push({ gateway, model, provider, ok: ok && ms !== null, status: ok && ms !== null ? 'success' : 'error', latencyMs: ms, error: ok && ms !== null ? null : 'boom', ts: now, source: 'passive' });
  };
  add('groq', 'llama-3.3-70b-versatile', 'meta-llama', [80, 90, 100, 90]);
  add('together', 'meta-llama/llama-3.3-70b-instruct', 'meta-llama', [600, 800]);
  add('openai', 'gpt-4o', 'openai', [600, 700, 800]);
  add('openrouter', 'openai/gpt-4o', 'openai', [200, null]);
  add('anthropic', 'claude-sonnet-4-5', 'anthropic', [1000, 1000, 1000], false);
  add('openai', 'gpt-4o-mini', 'openai', [40, 60]);
  await gw.store.health.record(obs);
  const usage = (gateway: string, model: string, i: number) => ({
    request_id: `req-${gateway}-${i}`, endpoint: '/v1/chat/completions', gateway, provider: 'x', model, status: 'success', http_status: 200,
    prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cost_nano: 0, latency_ms: 0, created_at: now - 3600_000,
  });
  await gw.store.usage.insertMany([
    usage('groq', 'llama-3.3-70b-versatile', 1), usage('groq', 'llama-3.3-70b-versatile', 2), usage('groq', 'llama-3.3-70b-versatile', 3),
    usage('openai', 'gpt-4o', 4),
    // older than 7 days: not counted
    { ...usage('openai', 'gpt-4o', 5), created_at: now - 8 * 24 * 3600_000 },
  ]);
  await gw.services.catalog.refreshHealth();
}
