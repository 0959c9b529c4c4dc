/** The one interface every provider adapter implements (see src/providers/registry.ts). */
import type { ChatRequest, ChatResult, StreamEvent } from '../engine/types.js';
import type { GatewayInfo } from '../catalog/types.js';
import type { Timeouts } from './http.js';

/** Where and how one call goes: the gateway, its resolved endpoint and key, and the upstream model id. */
export interface Target {
  gateway: GatewayInfo;
  /** API root as the provider's SDK takes it (`<ID>_BASE_URL` or the seed default), no trailing slash. */
  baseUrl: string;
  apiKey: string;
  upstreamModel: string;
  timeouts: Timeouts;
}

export interface DiscoveredModel {
  id: string;
  name?: string;
  contextLength?: number | null;
  /** USD per token, when the upstream publishes prices (OpenRouter). */
  pricing?: { prompt: number | null; completion: number | null };
  created?: number;
}

export interface ProviderAdapter {
  /** Non-streaming chat. Throws UpstreamError. */
  chat(req: ChatRequest, target: Target, signal: AbortSignal): Promise<ChatResult>;
  /**
   * Streaming chat. Resolves once the upstream accepted the request (status 2xx and headers), so the engine can
   * still fail over; the events then flow. Ends with an `end` event, or throws UpstreamError('stream_broken').
   */
  chatStream(req: ChatRequest, target: Target, signal: AbortSignal): Promise<AsyncIterable<StreamEvent>>;
  /** The upstream's model list (discovery). */
  listModels?(target: Omit<Target, 'upstreamModel'>, signal: AbortSignal): Promise<DiscoveredModel[]>;
}
