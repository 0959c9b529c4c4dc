/**
 * The typed TypeScript client of the gateway: openapi-fetch over the types `npm run gen` writes from
 * spec/openapi.yaml (generated/api.ts), so every path, parameter, body and response is checked by the compiler
 * against the contract the server validates against. Exported as `model-gateway/client` (package.json
 * "exports"); it is TypeScript source, for a TypeScript build, tsx or a bundler. Example: examples/client.ts.
 *
 *   const gw = createGatewayClient({ baseUrl: 'http://localhost:8000', apiKey: 'gw_live_…' });
 *   const reply = unwrap(await gw.POST('/v1/chat/completions', { body: { model, messages } }));
 *
 * For token streams use the official OpenAI or Anthropic SDK against the same gateway (README), or pass
 * `parseAs: 'stream'` and read `response.body` as server-sent events.
 */
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from '../generated/api.js';

export type { components, operations, paths };
/** Every schema of the spec by name, e.g. `Schemas['ChatCompletion']`. */
export type Schemas = components['schemas'];
/**
 * Responses are typed as their `application/json` content: a chat completion is a `ChatCompletion`, not a
 * union with the SSE chunk type a `stream: true` request gets (read those with `parseAs: 'stream'`).
 */
export type GatewayClient = Client<paths, 'application/json'>;

export interface GatewayClientOptions extends Omit<ClientOptions, 'baseUrl' | 'headers'> {
  /** The gateway's origin, e.g. `http://localhost:8000` (no `/v1`: the paths carry it). */
  baseUrl: string;
  /** A gateway key (`gw_live_…`), sent as `Authorization: Bearer`. Public operations work without one. */
  apiKey?: string;
  /** Sent with every request (after the key, so one may replace it). */
  headers?: Record<string, string>;
}

export function createGatewayClient({ baseUrl, apiKey, headers, ...rest }: GatewayClientOptions): GatewayClient {
  return createClient<paths, 'application/json'>({
    ...rest,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    headers: { ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}), ...headers },
  });
}

/**
 * An error answer of the gateway: the HTTP status and the body as sent — the spec's `Error`
 * (`{error:{message,type,code}}`), `HTTPValidationError` for 422 (`{detail:[{loc,msg,type}]}`), or the
 * Anthropic shape on `/v1/messages`.
 */
export class GatewayError extends Error {
  constructor(readonly status: number, readonly body: unknown, readonly requestId: string | null) {
    super(`gateway answered ${status}: ${describe(body)}`);
    this.name = 'GatewayError';
  }
}

function describe(body: any): string {
  if (typeof body?.error?.message === 'string') return body.error.message;
  if (Array.isArray(body?.detail)) return body.detail.map((d: any) => `${(d?.loc ?? []).join('.')}: ${d?.msg}`).join('; ');
  return typeof body === 'string' ? body.slice(0, 200) : 'no error message';
}

/** The `data` of a successful call; any error answer throws a GatewayError carrying it. */
export function unwrap<R extends { data?: unknown; error?: unknown; response: Response }>(result: R): Exclude<R['data'], undefined> {
  if (!result.response.ok || result.data === undefined) {
    throw new GatewayError(result.response.status, result.error, result.response.headers.get('x-request-id'));
  }
  return result.data as Exclude<R['data'], undefined>;
}
