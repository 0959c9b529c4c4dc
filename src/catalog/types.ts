/** What the engine needs of the catalog: offers of a model across gateways, with prices and limits. */

export type WireFormat = 'openai' | 'anthropic' | 'gemini';

/** An upstream gateway (provider service) as seeded in seeds/gateways.json. */
export interface GatewayInfo {
  id: string;
  name: string;
  wireFormat: WireFormat;
  /** Default API root as the provider's official SDK takes it (overridden by `<ID>_BASE_URL`). */
  baseUrl: string;
  /** The environment variable that holds its key (`<ID>_API_KEY`). */
  keyEnv: string;
  color: string;
  priority: 'fast' | 'slow';
  siteUrl: string;
  logoUrl: string;
  aliases: string[];
  /**
   * The key is optional (a local server): the gateway counts as configured when `<ID>_BASE_URL` is set, and
   * the key, when given, is still sent.
   */
  keyOptional?: boolean;
}

/** One model as one gateway serves it. Prices are USD per token (null = unknown). */
export interface Offer {
  gateway: string;
  /** The id the upstream expects in its request. */
  upstreamModel: string;
  /** Canonical `developer/model` id shared by offers of the same model on different gateways. */
  modelId: string;
  developer: string;
  name: string;
  pricing: {
    prompt: number | null;
    completion: number | null;
    cacheRead: number | null;
    cacheWrite: number | null;
    /** USD per image for image models; USD per minute for audio models. */
    image: number | null;
    audioPerMinute: number | null;
  };
  contextLength: number | null;
  maxOutputTokens: number | null;
  capabilities: { tools: boolean; vision: boolean; reasoning: boolean; jsonMode: boolean; streaming: boolean };
  modalities: { input: string[]; output: string[] };
}

export interface CatalogReader {
  /**
   * Offers that serve `model`, in the order the engine should try them (its failover list):
   * - `developer/model` (canonical id): every gateway's offer. Checked first, so `openai/gpt-4o` means the
   *   model on every gateway; pin one gateway with the request's `provider` instead.
   * - `gateway/model` (gateway id or alias, then the upstream or canonical id): that gateway only.
   * - a bare id (`gpt-4o`, `llama-3.3-70b-versatile`): matched against the model part of canonical ids and
   *   against upstream ids; every offer of the matching canonical model(s).
   * - `router:<mode>`: chat models of configured gateways, `router:<mode>/<model>`: that model's offers, both
   *   ordered by the router mode (see GET /v1/routers; unknown mode → empty).
   * Plain ids are ordered like `router:cheapest` (configured, active and healthy offers first, then by price).
   * Empty when unknown.
   */
  resolve(model: string): readonly Offer[];
  gateway(id: string): GatewayInfo | undefined;
  gateways(): GatewayInfo[];
}
