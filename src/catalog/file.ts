/**
 * A catalog read from a JSON file (CATALOG_FILE), used instead of the default catalog. Meant for tests that
 * start the real process, for demos against the upstream simulator, and for small private deployments:
 *
 *   { "gateways": [{ "id": "openai", "url": "http://127.0.0.1:9999/v1", "key": "sk-…" }, …],
 *     "offers":   [{ "gateway": "openai", "upstreamModel": "gpt-4o-mini", "modelId": "openai/gpt-4o-mini",
 *                    "pricing": { "prompt": 1e-6, "completion": 2e-6 } }, …] }
 *
 * A gateway's endpoint and key come from its `url`/`key`, else from `<ID>_BASE_URL`/`<ID>_API_KEY`; without a
 * key it is listed but not configured. Omitted fields take neutral defaults. Model names resolve like the
 * seeded catalog: `gateway/model` (that gateway only), or a canonical or upstream model id (every gateway).
 */
import fs from 'node:fs';
import { ConfigError, upstreamSetting, type Config } from '../config.js';
import type { Upstreams } from '../engine/chat.js';
import type { CatalogReader, GatewayInfo, Offer } from './types.js';

type FileGateway = Partial<GatewayInfo> & { id: string; url?: string; key?: string };
type FileOffer = Partial<Omit<Offer, 'pricing'>> & { gateway: string; upstreamModel: string; modelId: string; pricing?: Partial<Offer['pricing']> };

function gatewayOf(g: FileGateway): GatewayInfo {
  return {
    id: g.id, name: g.name ?? g.id, wireFormat: g.wireFormat ?? 'openai', baseUrl: g.baseUrl ?? g.url ?? '',
    keyEnv: g.keyEnv ?? `${g.id.toUpperCase().replace(/-/g, '_')}_API_KEY`, color: g.color ?? 'bg-gray-500',
    priority: g.priority ?? 'fast', siteUrl: g.siteUrl ?? '', logoUrl: g.logoUrl ?? '', aliases: g.aliases ?? [],
  };
}

function offerOf(o: FileOffer): Offer {
  return {
    gateway: o.gateway, upstreamModel: o.upstreamModel, modelId: o.modelId, developer: o.developer ?? o.modelId.split('/')[0],
    name: o.name ?? o.modelId,
    pricing: { prompt: null, completion: null, cacheRead: null, cacheWrite: null, image: null, audioPerMinute: null, ...o.pricing },
    contextLength: o.contextLength ?? null, maxOutputTokens: o.maxOutputTokens ?? null,
    capabilities: o.capabilities ?? { tools: true, vision: true, reasoning: false, jsonMode: true, streaming: true },
    modalities: o.modalities ?? { input: ['text'], output: ['text'] },
  };
}

export function loadCatalogFile(file: string, config: Config): CatalogReader & Upstreams {
  let raw: { gateways?: FileGateway[]; offers?: FileOffer[] };
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError('CATALOG_FILE', `cannot read ${file}: ${(err as Error).message}`);
  }
  if (!Array.isArray(raw?.gateways) || !Array.isArray(raw?.offers)) throw new ConfigError('CATALOG_FILE', 'needs "gateways" and "offers" arrays');
  for (const g of raw.gateways) if (typeof g?.id !== 'string' || !g.id) throw new ConfigError('CATALOG_FILE', 'every gateway needs an "id"');
  const files = new Map(raw.gateways.map((g) => [g.id, g]));
  const gateways = raw.gateways.map(gatewayOf);
  const byId = new Map(gateways.map((g) => [g.id, g]));
  const offers = raw.offers.map((o) => {
    if (typeof o?.gateway !== 'string' || !byId.has(o.gateway) || typeof o.upstreamModel !== 'string' || typeof o.modelId !== 'string') {
      throw new ConfigError('CATALOG_FILE', `offer ${JSON.stringify(o).slice(0, 120)} needs "gateway" (a listed id), "upstreamModel" and "modelId"`);
    }
    return offerOf(o);
  });
  return {
    gateway: (id) => byId.get(id),
    gateways: () => gateways,
    upstream(id) {
      const g = files.get(id);
      if (!g) return undefined;
      const env = upstreamSetting(config, id);
      const apiKey = g.key ?? env.apiKey;
      const baseUrl = g.url ?? env.baseUrl ?? g.baseUrl;
      // without a trailing slash, as the seeded catalog's (the engine appends paths to it)
      return apiKey && baseUrl ? { baseUrl: baseUrl.replace(/\/+$/, ''), apiKey } : undefined;
    },
    resolve(model) {
      const slash = model.indexOf('/');
      if (slash > 0 && byId.has(model.slice(0, slash))) {
        const g = model.slice(0, slash);
        const rest = model.slice(slash + 1);
        return offers.filter((o) => o.gateway === g && (o.upstreamModel === rest || o.modelId === rest));
      }
      return offers.filter((o) => o.modelId === model || o.upstreamModel === model);
    },
  };
}
