/** Small helpers every native adapter needs: data URLs, stream JSON and unary JSON answers (streams: body-events.ts). */
import { UpstreamError } from '../engine/types.js';
import { randomHex } from '../ids.js';
import { readJson, transportError, type UpstreamResponse } from './http.js';

/**
 * `data:<mime>;base64,<data>` split into its parts; undefined for any other URL. Only the part before the first comma
 * is matched with a pattern (the data is a slice): a pattern over a 2 MB image took ~1 ms.
 */
export function parseDataUrl(url: string): { mimeType: string; data: string } | undefined {
  if (!url.startsWith('data:')) return undefined;
  const comma = url.indexOf(',');
  if (comma < 0) return undefined;
  const m = /^data:([^;,]+)(?:;[^;,]+)*;base64$/.exec(url.slice(0, comma));
  return m ? { mimeType: m[1]!, data: url.slice(comma + 1) } : undefined;
}

/** An id for a response the upstream did not name. */
export const generatedId = (prefix: string): string => `${prefix}${randomHex(24)}`;

/** One SSE `data:` payload as a JSON object; anything else means the upstream spoke garbage. */
export function parseEventJson(data: string, upstream: string): Record<string, any> {
  let v: unknown;
  try {
    v = JSON.parse(data);
  } catch {
    throw new UpstreamError('invalid_response', `${upstream} sent a stream event that is not JSON`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new UpstreamError('invalid_response', `${upstream} sent a stream event that is not a JSON object`);
  return v as Record<string, any>;
}

/**
 * Thinking signatures are opaque and only their issuer can verify them. Gemini's travel in
 * `ThinkingBlock.signature` behind this prefix, so a conversation that moves between upstreams (failover) never
 * hands Anthropic a Gemini signature, nor Gemini an Anthropic one.
 */
export const GEMINI_SIGNATURE_PREFIX = 'gemini:';

/** A unary JSON answer; a body that breaks off while being read is a transport failure like any other. */
export async function readJsonBody<T>(res: UpstreamResponse, signal: AbortSignal): Promise<T> {
  try {
    return await readJson<T>(res.body);
  } catch (err) {
    throw transportError(err, signal);
  }
}
