/**
 * The Anthropic Messages adapter. A request whose client spoke Anthropic (`req.anthropicBody`) goes natively:
 * the client's own body, so nothing the internal model does not name is lost, and the raw answer comes back
 * beside the mapped one.
 */
import type { ChatRequest } from '../../engine/types.js';
import { send, upstreamUrl } from '../http.js';
import type { ProviderAdapter, Target } from '../types.js';
import { readJsonBody } from '../shared.js';
import { nativeBody, toAnthropicRequest } from './request.js';
import { fromAnthropicMessage } from './response.js';
import { anthropicEvents } from './stream.js';
import type { AMessage } from './wire.js';
import { jsonBody } from '../../json-body.js';

export const ANTHROPIC_VERSION = '2023-06-01';

function post(req: ChatRequest, target: Target, signal: AbortSignal, stream: boolean) {
  const body = req.anthropicBody ? nativeBody(req.anthropicBody, target.upstreamModel, stream) : toAnthropicRequest(req, target.upstreamModel, stream);
  return send(upstreamUrl(target.baseUrl, '/v1/messages'), {
    headers: {
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
      'x-api-key': target.apiKey,
      'anthropic-version': ANTHROPIC_VERSION,
      ...(req.anthropicBody && req.anthropicBeta ? { 'anthropic-beta': req.anthropicBeta } : {}),
    },
    body: jsonBody(body),
    signal,
    timeouts: target.timeouts,
  });
}

export const anthropicAdapter: ProviderAdapter = {
  async chat(req, target, signal) {
    const res = await post(req, target, signal, false);
    return fromAnthropicMessage(await readJsonBody<AMessage>(res, signal), req.anthropicBody !== undefined);
  },

  async chatStream(req, target, signal) {
    const res = await post(req, target, signal, true);
    return anthropicEvents(res.body, req.anthropicBody !== undefined, signal);
  },
};
