/**
 * Seeds + discovered lists → the offers the catalog serves.
 * - A discovered model that a seed already has (same gateway and upstream id) keeps the seed's facts; the
 *   upstream's context length, output limit and published prices (OpenRouter) replace the seed's values.
 * - A discovered model the seeds do not know becomes a new offer with a canonical id (src/catalog/canonical.ts).
 *   Facts that belong to the model rather than the gateway (family, modalities, capabilities, open weights,
 *   release date, quality) are copied from a seed offer of the same canonical model on another gateway;
 *   prices are only ever the gateway's own (null when it publishes none). Without such a seed, what the
 *   upstream listed is used, else text → text with no capabilities claimed.
 * - Seed offers missing from a discovered list stay: some upstreams list only dated snapshots, not aliases.
 * Models of a key-optional (local) gateway, and fine-tunes (`ft:`), are private.
 */
import type { CatalogOfferRow } from '../store/catalog.js';
import { canonicalId } from './canonical.js';
import type { CatalogOffer } from './seeds.js';
import type { GatewayInfo } from './types.js';

const num = (s: string | null): number | null => (s === null ? null : Number(s));

interface Extra {
  modalities?: { input: string[]; output: string[] };
  capabilities?: { tools?: boolean; reasoning?: boolean; jsonMode?: boolean };
}

function parseExtra(s: string | null): Extra {
  if (!s) return {};
  try {
    return JSON.parse(s) as Extra;
  } catch {
    return {};
  }
}

function updateSeed(seed: CatalogOffer, row: CatalogOfferRow): CatalogOffer {
  const hasPrice = row.prompt_price !== null && row.completion_price !== null;
  return {
    ...seed,
    description: seed.description ?? row.description,
    contextLength: row.context_length ?? seed.contextLength,
    maxOutputTokens: row.max_output_tokens ?? seed.maxOutputTokens,
    pricing: hasPrice ? { ...seed.pricing, prompt: num(row.prompt_price), completion: num(row.completion_price) } : seed.pricing,
  };
}

function newOffer(g: GatewayInfo, row: CatalogOfferRow, modelId: string, developer: string, template: CatalogOffer | undefined): CatalogOffer {
  const extra = parseExtra(row.extra);
  const modalities = template?.modalities ?? extra.modalities ?? { input: ['text'], output: ['text'] };
  const caps = template?.capabilities ?? {
    tools: extra.capabilities?.tools === true,
    vision: modalities.input.includes('image'),
    reasoning: extra.capabilities?.reasoning === true,
    jsonMode: extra.capabilities?.jsonMode === true,
    streaming: modalities.input.includes('text') && modalities.output.includes('text'),
  };
  return {
    gateway: g.id,
    upstreamModel: row.upstream_model,
    modelId,
    developer,
    name: row.name ?? template?.name ?? row.upstream_model,
    family: template?.family ?? null,
    description: row.description ?? template?.description ?? null,
    pricing: { prompt: num(row.prompt_price), completion: num(row.completion_price), cacheRead: null, cacheWrite: null, image: null, audioPerMinute: null },
    contextLength: row.context_length ?? template?.contextLength ?? null,
    maxOutputTokens: row.max_output_tokens ?? template?.maxOutputTokens ?? null,
    capabilities: caps,
    modalities,
    openWeights: template?.openWeights ?? false,
    isPrivate: g.keyOptional === true || /^ft:/.test(row.upstream_model),
    isActive: true,
    releaseDate: template?.releaseDate ?? null,
    qualityScore: template?.qualityScore ?? null,
  };
}

export function mergeOffers(seeds: CatalogOffer[], discovered: Map<string, CatalogOfferRow[]>, gateways: GatewayInfo[]): CatalogOffer[] {
  const byId = new Map<string, CatalogOffer>();
  for (const o of seeds) if (!byId.has(o.modelId)) byId.set(o.modelId, o);
  const out: CatalogOffer[] = [];
  const bySeedKey = new Map<string, number>();
  for (const o of seeds) {
    bySeedKey.set(`${o.gateway}\u0000${o.upstreamModel}`, out.length);
    out.push(o);
  }
  for (const g of gateways) {
    const rows = discovered.get(g.id);
    if (!rows?.length) continue;
    const taken = new Set(out.filter((o) => o.gateway === g.id).map((o) => o.modelId));
    for (const row of rows) {
      const at = bySeedKey.get(`${g.id}\u0000${row.upstream_model}`);
      if (at !== undefined) {
        out[at] = updateSeed(out[at], row);
        continue;
      }
      let { modelId, developer } = canonicalId(g.id, row.upstream_model);
      // Another upstream id of this gateway already maps to that model: keep this one apart by its full id.
      if (taken.has(modelId)) modelId = `${developer}/${row.upstream_model.toLowerCase().split('/').pop()}`;
      if (taken.has(modelId)) continue;
      taken.add(modelId);
      out.push(newOffer(g, row, modelId, developer, byId.get(modelId)));
    }
  }
  return out;
}
