/** The Gemini API adapter (generateContent / streamGenerateContent, key in the x-goog-api-key header). */
import type { ChatRequest } from '../../engine/types.js';
import { send } from '../http.js';
import type { ProviderAdapter, Target } from '../types.js';
import { readJsonBody } from '../shared.js';
import { toGeminiRequest } from './request.js';
import { fromGeminiResponse, geminiHttpError } from './response.js';
import { geminiEvents } from './stream.js';
import type { GResponse } from './wire.js';
import { jsonBody } from '../../json-body.js';

/** `models/<id>` unless the id already names its collection (`tunedModels/…`). */
function modelPath(model: string): string {
  return model.includes('/') ? model : `models/${model}`;
}

function post(req: ChatRequest, target: Target, signal: AbortSignal, stream: boolean) {
  const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  return send(`${target.baseUrl}/v1beta/${modelPath(target.upstreamModel)}:${method}`, {
    headers: {
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
      'x-goog-api-key': target.apiKey,
    },
    body: jsonBody(toGeminiRequest(req)),
    signal,
    timeouts: target.timeouts,
    mapError: geminiHttpError,
  });
}

export const geminiAdapter: ProviderAdapter = {
  async chat(req, target, signal) {
    const res = await post(req, target, signal, false);
    return fromGeminiResponse(await readJsonBody<GResponse>(res, signal), target.upstreamModel);
  },

  async chatStream(req, target, signal) {
    const res = await post(req, target, signal, true);
    return geminiEvents(res.body, target.upstreamModel, signal);
  },
};
