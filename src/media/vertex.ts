/**
 * The Google Vertex AI endpoint provider for images (gateway `google`): `POST {base}/v1/projects/{project}/
 * locations/{location}/endpoints/{endpoint}:predict` for a deployed endpoint (`google_endpoint_id`), or
 * `…/publishers/google/models/{model}:predict` for Google's own models (Imagen) when no endpoint is named.
 * Request `{instances: [{prompt}], parameters: {sampleCount, …}}`; answer `{predictions: [...]}` where each
 * prediction is `{bytesBase64Encoded, mimeType}` (Imagen) or a bare base64 string (many Model Garden
 * containers). Vertex has no URLs: a `url` request gets a `data:` URL.
 *
 * Credentials come from configuration (GOOGLE_VERTEX_ACCESS_TOKEN, sent as a Bearer token); project, location
 * and endpoint from the request, else GOOGLE_VERTEX_PROJECT / _LOCATION / _ENDPOINT_ID.
 */
import type { Config } from '../config.js';
import { UpstreamError } from '../engine/types.js';
import { send } from '../providers/http.js';
import { readJsonBody } from '../providers/shared.js';
import type { Target } from '../providers/types.js';
import type { ImageAdapter, ImageCall, ImageResult } from './types.js';

const gcd = (a: number, b: number): number => (b ? gcd(b, a % b) : a);

export function predictUrl(target: Target, call: ImageCall): string {
  const v = call.vertex!;
  const base = target.baseUrl.replace('{location}', v.location);
  const root = `${base}/v1/projects/${encodeURIComponent(v.project!)}/locations/${encodeURIComponent(v.location)}`;
  return v.endpointId
    ? `${root}/endpoints/${encodeURIComponent(v.endpointId)}:predict`
    : `${root}/publishers/google/models/${encodeURIComponent(target.upstreamModel)}:predict`;
}

export const vertexImages: ImageAdapter = {
  endpoint(config: Config) {
    const v = config.media.vertex;
    return v.accessToken ? { baseUrl: v.baseUrl, apiKey: v.accessToken } : undefined;
  },

  check(call: ImageCall) {
    return call.vertex?.project ? null : { param: 'google_project_id', msg: 'google_project_id is required for the cloud-endpoint provider (no default project is configured)' };
  },

  async generate(call: ImageCall, target: Target, signal: AbortSignal): Promise<ImageResult> {
    // Imagen takes an aspect ratio; deployed containers (Stable Diffusion and the like) take pixel sizes.
    const g = gcd(call.width, call.height);
    const parameters: Record<string, unknown> = call.vertex?.endpointId
      ? { sampleCount: call.n, width: call.width, height: call.height }
      : { sampleCount: call.n, aspectRatio: `${call.width / g}:${call.height / g}` };
    const res = await send(predictUrl(target, call), {
      headers: { authorization: `Bearer ${target.apiKey}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ instances: [{ prompt: call.prompt }], parameters }),
      signal,
      timeouts: target.timeouts,
    });
    const json = await readJsonBody<any>(res, signal);
    if (!Array.isArray(json?.predictions)) throw new UpstreamError('invalid_response', 'Vertex answered without predictions');
    const images = json.predictions.map((p: any) => {
      if (typeof p === 'string') return { b64: p };
      const b64 = p?.bytesBase64Encoded ?? p?.image ?? p?.b64_json;
      return typeof b64 === 'string' ? { b64, mimeType: typeof p.mimeType === 'string' ? p.mimeType : undefined } : null;
    }).filter(Boolean);
    // Imagen drops images its safety filter blocks; none left means the prompt was refused.
    if (!images.length) throw new UpstreamError('bad_request', 'the image provider returned no images (the prompt may have been blocked by its safety filter)', 400);
    return { images };
  },
};
