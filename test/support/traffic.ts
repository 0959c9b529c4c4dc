/**
 * Known traffic for the statistics and health tests: usage records and health observations at fixed times
 * before a pinned NOW (mid-hour, so every window has raw edges, whole hours and whole days). The expected
 * figures in the tests are worked out by hand from these rows.
 */
import type { UsageRecord } from '../../src/store/usage.js';
import type { HealthObservation } from '../../src/store/health.js';

/** 2030-01-15T10:37:12.345Z: not on an hour, a day or a 5-minute boundary. */
export const NOW = Date.UTC(2030, 0, 15, 10, 37, 12, 345);
export const MIN = 60_000;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;

let requestSeq = 0;

export function usage(p: {
  provider: string; gateway: string; model: string; status: string; prompt: number; completion: number;
  costNano: number; latency: number; ttft?: number | null; user: number | null; ago: number;
}): UsageRecord {
  requestSeq += 1;
  return {
    request_id: `req-${requestSeq}`, user_id: p.user, key_id: p.user, endpoint: 'chat', gateway: p.gateway, provider: p.provider,
    model: p.model, status: p.status, error_class: p.status === 'success' ? null : p.status,
    http_status: p.status === 'success' ? 200 : 502, prompt_tokens: p.prompt, completion_tokens: p.completion, cached_tokens: 0,
    cost_nano: p.costNano, latency_ms: p.latency, ttft_ms: p.ttft ?? null, created_at: NOW - p.ago,
  };
}

const G4 = 'openai/gpt-4o';
const MINI = 'openai/gpt-4o-mini';
const CLAUDE = 'anthropic/claude-x';

/**
 * r1–r5 inside the last hour, r6–r8 inside 24 h only (r8 in the partial hour at the 24 h window's start),
 * r9 five minutes before the 24 h window (same clock hour as r8: an hourly rollup row must not leak it),
 * r10 inside 7 d only, r11 only in `all`.
 */
export function knownTraffic(): UsageRecord[] {
  return [
    usage({ provider: 'openai', gateway: 'openrouter', model: G4, status: 'success', prompt: 100, completion: 50, costNano: 1_500_000, latency: 1000, ttft: 200, user: 1, ago: 10 * MIN }),
    usage({ provider: 'openai', gateway: 'openai', model: G4, status: 'success', prompt: 200, completion: 100, costNano: 3_000_000, latency: 2000, user: 2, ago: 20 * MIN }),
    usage({ provider: 'openai', gateway: 'openai', model: MINI, status: 'error', prompt: 50, completion: 0, costNano: 0, latency: 500, user: 1, ago: 30 * MIN }),
    usage({ provider: 'anthropic', gateway: 'anthropic', model: CLAUDE, status: 'success', prompt: 300, completion: 30, costNano: 2_000_000, latency: 3000, ttft: 1000, user: 3, ago: 40 * MIN }),
    usage({ provider: 'openai', gateway: 'openrouter', model: MINI, status: 'cancelled', prompt: 10, completion: 5, costNano: 100_000, latency: 700, ttft: 100, user: 2, ago: 50 * MIN }),
    usage({ provider: 'openai', gateway: 'openai', model: MINI, status: 'success', prompt: 400, completion: 200, costNano: 800_000, latency: 4000, user: 3, ago: 3 * HOUR }),
    usage({ provider: 'openai', gateway: 'openrouter', model: G4, status: 'timeout', prompt: 0, completion: 0, costNano: 0, latency: 30_000, user: 1, ago: 5 * HOUR }),
    usage({ provider: 'openai', gateway: 'openai', model: G4, status: 'success', prompt: 1000, completion: 1, costNano: 10_000_000, latency: 1001, ttft: 1000, user: 4, ago: DAY - 5 * MIN }),
    usage({ provider: 'openai', gateway: 'openai', model: G4, status: 'success', prompt: 5, completion: 5, costNano: 50, latency: 100, user: 5, ago: DAY + 5 * MIN }),
    usage({ provider: 'openai', gateway: 'openrouter', model: MINI, status: 'rate_limited', prompt: 0, completion: 0, costNano: 0, latency: 200, user: 2, ago: 3 * DAY }),
    usage({ provider: 'openai', gateway: 'openai', model: G4, status: 'success', prompt: 10, completion: 10, costNano: 1000, latency: 300, user: 6, ago: 40 * DAY }),
  ];
}

export const MODELS = { G4, MINI, CLAUDE };

/** The configured gateways the tests' catalog stand-in knows (groq has no traffic; `or` is an alias). */
export const DIRECTORY = {
  gateways: () => [
    { id: 'anthropic', aliases: [] },
    { id: 'groq', aliases: ['groq-cloud'] },
    { id: 'openai', aliases: [] },
    { id: 'openrouter', aliases: ['or'] },
  ],
};

/** `n` observations of one (gateway, model), oldest first, one minute apart, ending `endAgo` before NOW. */
export function calls(gateway: string, provider: string, model: string, outcomes: string, opts: { endAgo?: number; latency?: number[] | number; stepMs?: number; source?: 'passive' | 'probe' } = {}): HealthObservation[] {
  const step = opts.stepMs ?? MIN;
  const end = NOW - (opts.endAgo ?? MIN);
  const list = outcomes.split('');
  return list.map((c, i) => {
    const ok = c === '1';
    const lat = Array.isArray(opts.latency) ? opts.latency[i] : (opts.latency ?? 100);
    return {
      gateway, model, provider, ok, status: ok ? 'success' : c === 't' ? 'timeout' : 'error', latencyMs: c === 't' ? null : lat,
      error: ok ? null : `boom ${i}`, ts: end - (list.length - 1 - i) * step, source: opts.source ?? 'passive',
    };
  });
}

/** '1' × ok then '0' × failed etc.: `seq('0', 4, '1', 16)` = '0000' + '1' × 16. */
export function seq(...parts: Array<string | number>): string {
  let out = '';
  for (let i = 0; i < parts.length; i += 2) out += String(parts[i]).repeat(Number(parts[i + 1]));
  return out;
}
