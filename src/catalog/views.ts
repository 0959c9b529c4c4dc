/** Wire shapes of catalog objects (spec/openapi.yaml schemas), one function per schema. */
import type { Entry } from './entry.js';
import type { UniqueModelEntry } from './snapshot.js';
import type { GatewayInfo } from './types.js';

/** A USD amount as a plain decimal string (no exponent, no float noise), null stays null. */
export function decimal(n: number | null): string | null {
  if (n === null || !Number.isFinite(n)) return null;
  if (n === 0) return '0';
  const [mant, expStr] = Math.abs(n).toExponential(11).split('e');
  const exp = Number(expStr);
  const digits = mant.replace('.', '').replace(/0+$/, '') || '0';
  let s: string;
  if (exp < 0) s = `0.${'0'.repeat(-exp - 1)}${digits}`;
  else if (digits.length <= exp + 1) s = digits + '0'.repeat(exp + 1 - digits.length);
  else s = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  return (n < 0 ? '-' : '') + s;
}

export interface RecordOptions {
  /** Add `hub` (null: the hub facade is not wired into the catalog). */
  hub?: boolean;
}

/** ModelRecord: one offer. */
export function modelRecord(e: Entry, opts: RecordOptions = {}): Record<string, unknown> {
  const o = e.o;
  const rec: Record<string, unknown> = {
    id: o.modelId,
    name: o.name,
    developer: o.developer,
    family: o.family,
    gateway: o.gateway,
    gateway_model_id: o.upstreamModel,
    description: o.description,
    context_length: o.contextLength,
    max_output_tokens: o.maxOutputTokens,
    pricing: {
      prompt: decimal(o.pricing.prompt),
      completion: decimal(o.pricing.completion),
      cache_read: decimal(o.pricing.cacheRead),
      cache_write: decimal(o.pricing.cacheWrite),
      image: decimal(o.pricing.image),
      audio_per_minute: decimal(o.pricing.audioPerMinute),
    },
    modalities: { input: o.modalities.input, output: o.modalities.output },
    capabilities: {
      tools: o.capabilities.tools,
      vision: o.capabilities.vision,
      reasoning: o.capabilities.reasoning,
      json_mode: o.capabilities.jsonMode,
      streaming: o.capabilities.streaming,
    },
    open_weights: o.openWeights,
    is_private: o.isPrivate,
    is_active: o.isActive,
    release_date: o.releaseDate,
    categories: e.categories,
    quality_score: o.qualityScore,
    health_status: e.health,
    average_response_time_ms: e.avgMs,
  };
  if (opts.hub) rec.hub = null;
  return rec;
}

/** ModelProviderOffer: one gateway's offer inside a unique-model view. */
export function providerOffer(e: Entry, gatewayName: string) {
  return {
    slug: e.o.gateway,
    name: gatewayName,
    pricing: { prompt: decimal(e.o.pricing.prompt), completion: decimal(e.o.pricing.completion) },
    context_length: e.o.contextLength,
    health_status: e.health,
    average_response_time_ms: e.avgMs,
  };
}

export function uniqueModel(u: UniqueModelEntry, offers: Entry[], gatewayName: (id: string) => string) {
  return {
    id: u.modelId,
    name: u.name,
    provider_count: offers.length,
    providers: offers.map((e) => providerOffer(e, gatewayName(e.o.gateway))),
    cheapest_provider: u.cheapest?.o.gateway ?? null,
    fastest_provider: u.fastest?.o.gateway ?? null,
    cheapest_prompt_price: u.cheapest?.o.pricing.prompt ?? null,
    fastest_response_time: u.fastest?.avgMs ?? null,
  };
}

/** The OpenAI `models.list()` item for a record, so the OpenAI SDK can page the catalog. */
export function openaiModel(e: Entry) {
  const t = e.o.releaseDate ? Date.parse(`${e.o.releaseDate}T00:00:00Z`) : NaN;
  return { id: e.o.modelId, object: 'model' as const, created: Number.isFinite(t) ? Math.floor(t / 1000) : 0, owned_by: e.o.developer };
}

export function gatewayConfig(g: GatewayInfo, configured: boolean) {
  return {
    id: g.id,
    name: g.name,
    color: g.color,
    priority: g.priority,
    site_url: g.siteUrl,
    logo_url: g.logoUrl,
    aliases: g.aliases,
    configured,
    wire_format: g.wireFormat,
  };
}
