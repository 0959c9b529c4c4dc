/**
 * Discovery: one gateway's live model list, fetched with the shared upstream client (src/providers/http.ts).
 * Three list shapes are understood: OpenAI-style `GET {base}/models` (`{data:[…]}` or a bare array; when an
 * item carries OpenRouter-style `pricing` with per-token decimal strings, `context_length`, `architecture` and
 * `supported_parameters`, those are kept too), Anthropic's `GET {base}/v1/models` (x-api-key,
 * anthropic-version) and Gemini's `GET {base}/v1beta/models` (x-goog-api-key). Which one is used follows the
 * gateway's wire format; the richer fields are read by shape, not by gateway name.
 */
import { send, readJson, type Timeouts } from '../providers/http.js';
import { UpstreamError } from '../engine/types.js';
import type { DiscoveredRow } from '../store/catalog.js';
import type { GatewayInfo } from './types.js';
import { decimal } from './views.js';

export interface Upstream {
  baseUrl: string;
  apiKey: string;
}

const MAX_PAGES = 20;
const MODALITIES = new Set(['text', 'image', 'audio', 'video', 'pdf']);

const posInt = (...vals: unknown[]): number | null => {
  for (const v of vals) if (typeof v === 'number' && Number.isInteger(v) && v > 0) return v;
  return null;
};
const str = (v: unknown, max = 500): string | null => (typeof v === 'string' && v.trim() ? v.trim().slice(0, max) : null);

/** A published per-token price as plain decimal text; negative or malformed (OpenRouter's `-1`) = unknown. */
function price(v: unknown): string | null {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : NaN;
  return Number.isFinite(n) && n >= 0 ? decimal(n) : null;
}

async function getJson(url: string, headers: Record<string, string>, signal: AbortSignal, timeouts: Timeouts): Promise<any> {
  const res = await send(url, { method: 'GET', headers: { accept: 'application/json', ...headers }, signal, timeouts });
  return readJson(res.body);
}

function openaiItem(item: any): DiscoveredRow | null {
  const id = str(item?.id, 300);
  if (!id) return null;
  const arch = item.architecture;
  const params: unknown[] = Array.isArray(item.supported_parameters) ? item.supported_parameters : [];
  const input = Array.isArray(arch?.input_modalities) ? arch.input_modalities.filter((m: string) => MODALITIES.has(m)) : null;
  const output = Array.isArray(arch?.output_modalities) ? arch.output_modalities.filter((m: string) => MODALITIES.has(m)) : null;
  const extra = input?.length && output?.length
    ? {
        modalities: { input, output },
        capabilities: {
          tools: params.includes('tools'),
          reasoning: params.includes('reasoning') || params.includes('include_reasoning'),
          jsonMode: params.includes('structured_outputs') || params.includes('response_format'),
        },
      }
    : null;
  const perToken = item.pricing && typeof item.pricing === 'object' && typeof item.pricing.prompt === 'string';
  return {
    upstream_model: id,
    name: str(item.name, 200) ?? str(item.display_name, 200),
    description: str(item.description),
    context_length: posInt(item.context_length, item.context_window, item.max_model_len, item.top_provider?.context_length),
    max_output_tokens: posInt(item.top_provider?.max_completion_tokens, item.max_completion_tokens, item.max_output_tokens),
    prompt_price: perToken ? price(item.pricing.prompt) : null,
    completion_price: perToken ? price(item.pricing.completion) : null,
    extra: extra ? JSON.stringify(extra) : null,
  };
}

async function openaiList(base: string, key: string, signal: AbortSignal, t: Timeouts): Promise<DiscoveredRow[]> {
  const json = await getJson(`${base}/models`, key ? { authorization: `Bearer ${key}` } : {}, signal, t);
  const list = Array.isArray(json) ? json : Array.isArray(json?.data) ? json.data : null;
  if (!list) throw new UpstreamError('invalid_response', 'model list has no data array');
  return list.map(openaiItem).filter((r: DiscoveredRow | null): r is DiscoveredRow => r !== null);
}

async function anthropicList(base: string, key: string, signal: AbortSignal, t: Timeouts): Promise<DiscoveredRow[]> {
  const rows: DiscoveredRow[] = [];
  let after: string | null = null;
  for (let i = 0; i < MAX_PAGES; i++) {
    const url = `${base}/v1/models?limit=1000${after ? `&after_id=${encodeURIComponent(after)}` : ''}`;
    const json = await getJson(url, { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, signal, t);
    if (!Array.isArray(json?.data)) throw new UpstreamError('invalid_response', 'model list has no data array');
    for (const m of json.data) {
      const id = str(m?.id, 300);
      if (id) rows.push({ upstream_model: id, name: str(m.display_name, 200), description: null, context_length: null, max_output_tokens: null, prompt_price: null, completion_price: null, extra: null });
    }
    after = json.has_more === true ? str(json.last_id, 300) : null;
    if (!after) break;
  }
  return rows;
}

async function geminiList(base: string, key: string, signal: AbortSignal, t: Timeouts): Promise<DiscoveredRow[]> {
  const rows: DiscoveredRow[] = [];
  let token: string | null = null;
  for (let i = 0; i < MAX_PAGES; i++) {
    const url = `${base}/v1beta/models?pageSize=1000${token ? `&pageToken=${encodeURIComponent(token)}` : ''}`;
    const json = await getJson(url, { 'x-goog-api-key': key }, signal, t);
    if (!Array.isArray(json?.models)) throw new UpstreamError('invalid_response', 'model list has no models array');
    for (const m of json.models) {
      const id = str(m?.name, 300)?.replace(/^models\//, '');
      if (!id) continue;
      rows.push({
        upstream_model: id,
        name: str(m.displayName, 200),
        description: str(m.description),
        context_length: posInt(m.inputTokenLimit),
        max_output_tokens: posInt(m.outputTokenLimit),
        prompt_price: null,
        completion_price: null,
        extra: m.thinking === true ? JSON.stringify({ capabilities: { reasoning: true } }) : null,
      });
    }
    token = str(json.nextPageToken, 1000);
    if (!token) break;
  }
  return rows;
}

/** The gateway's current model list. Throws UpstreamError (sanitised message) on any failure. */
export async function discoverModels(g: GatewayInfo, up: Upstream, timeouts: Timeouts, signal: AbortSignal): Promise<DiscoveredRow[]> {
  const base = up.baseUrl.replace(/\/+$/, '');
  switch (g.wireFormat) {
    case 'openai': return openaiList(base, up.apiKey, signal, timeouts);
    case 'anthropic': return anthropicList(base, up.apiKey, signal, timeouts);
    case 'gemini': return geminiList(base, up.apiKey, signal, timeouts);
  }
}
