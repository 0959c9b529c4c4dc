/**
 * A small catalog for engine tests: real gateway ids whose endpoints point at a local simulator (the same thing
 * a user does with OPENAI_BASE_URL), and offers with round prices so costs can be worked out by hand.
 */
import type { CatalogReader, GatewayInfo, Offer, WireFormat } from '../../src/catalog/types.js';
import type { Upstreams } from '../../src/engine/chat.js';

export function gw(id: string, wireFormat: WireFormat = 'openai'): GatewayInfo {
  return { id, name: id, wireFormat, baseUrl: '', keyEnv: `${id.toUpperCase()}_API_KEY`, color: 'bg-gray-500', priority: 'fast', siteUrl: '', logoUrl: '', aliases: [] };
}

/** USD per token: $1 / M prompt, $2 / M completion, $0.25 / M cached. */
export function offer(gateway: string, upstreamModel: string, modelId: string, over: Partial<Offer> = {}): Offer {
  return {
    gateway, upstreamModel, modelId, developer: modelId.split('/')[0], name: modelId,
    pricing: { prompt: 1e-6, completion: 2e-6, cacheRead: 0.25e-6, cacheWrite: null, image: null, audioPerMinute: null },
    contextLength: 128_000, maxOutputTokens: 1000,
    capabilities: { tools: true, vision: true, reasoning: false, jsonMode: true, streaming: true },
    modalities: { input: ['text', 'image'], output: ['text'] },
    ...over,
  };
}

export function fixtureCatalog(opts: { gateways: Array<GatewayInfo & { url?: string; key?: string }>; offers: Offer[] }): CatalogReader & Upstreams {
  const byId = new Map(opts.gateways.map((g) => [g.id, g]));
  return {
    gateway: (id) => byId.get(id),
    gateways: () => opts.gateways,
    upstream(id) {
      const g = byId.get(id);
      return g?.url ? { baseUrl: g.url, apiKey: g.key ?? 'sim-key' } : undefined;
    },
    resolve(model) {
      const slash = model.indexOf('/');
      if (slash > 0 && byId.has(model.slice(0, slash))) {
        const g = model.slice(0, slash);
        const rest = model.slice(slash + 1);
        return opts.offers.filter((o) => o.gateway === g && (o.upstreamModel === rest || o.modelId === rest));
      }
      return opts.offers.filter((o) => o.modelId === model || o.upstreamModel === model);
    },
  };
}

/** An image model: `perImage` USD per 1024x1024 image, image output only. */
export function imageOffer(gateway: string, upstreamModel: string, modelId: string, perImage = 0.04): Offer {
  return offer(gateway, upstreamModel, modelId, {
    pricing: { prompt: null, completion: null, cacheRead: null, cacheWrite: null, image: perImage, audioPerMinute: null },
    contextLength: null, maxOutputTokens: null,
    capabilities: { tools: false, vision: false, reasoning: false, jsonMode: false, streaming: false },
    modalities: { input: ['text'], output: ['image'] },
  });
}

/** A transcription model: `perMinute` USD per minute of audio, audio in and text out. */
export function audioOffer(gateway: string, upstreamModel: string, modelId: string, perMinute = 0.006): Offer {
  return offer(gateway, upstreamModel, modelId, {
    pricing: { prompt: null, completion: null, cacheRead: null, cacheWrite: null, image: null, audioPerMinute: perMinute },
    contextLength: null, maxOutputTokens: null,
    capabilities: { tools: false, vision: false, reasoning: false, jsonMode: false, streaming: false },
    modalities: { input: ['audio'], output: ['text'] },
  });
}
