/** POST /v1/messages: the Anthropic Messages format over the same engine as chat completions. */
import type { Handler } from '../src/app.js';
import { ApiError, anthropicErrorType } from '../src/errors.js';
import { parseMessagesRequest, toAnthropicMessage, anthropicMessageJson, AnthropicEventWriter } from '../src/wire/anthropic-messages.js';
import { gatewayUsage, clientError } from '../src/engine/chat.js';
import { UpstreamError, emptyUsage } from '../src/engine/types.js';
import { FrameSink, clientGone, endSse, startSse, writeFrame } from '../src/engine/respond.js';
import { spread } from '../src/spread.js';

export const createMessage: Handler = async (ctx) => {
  const { engine } = ctx.deps.services;
  const beta = ctx.req.headers['anthropic-beta'];
  const req = parseMessagesRequest(ctx.body, Array.isArray(beta) ? beta.join(',') : beta);
  const abort = clientGone(ctx.res);
  const call = { principal: ctx.principal!, requestId: ctx.requestId, endpoint: 'messages', pinGateway: ctx.body.provider, signal: abort.signal };

  if (!req.stream) {
    const { result, served } = await engine.complete(req, call);
    // A native answer is the upstream's own message (copied by assignment: src/spread.ts), with only `model` renamed to
    // the catalog id, as everywhere; a mapped one is built fresh. Either gets gateway_usage last.
    const body: Record<string, unknown> = result.anthropicMessage ? spread(result.anthropicMessage) : toAnthropicMessage(result, served.offer.modelId);
    body.model = served.offer.modelId;
    body.gateway_usage = gatewayUsage(served);
    return {
      body,
      // a mapped answer's text written from its known shape, a native one's by JSON.stringify (sendJson)
      text: result.anthropicMessage ? undefined : anthropicMessageJson(body),
      headers: { 'X-Gateway-Provider': served.offer.gateway, 'X-Gateway-Model': served.offer.upstreamModel },
    };
  }

  const stream = await engine.stream(req, call);
  const writer = new AnthropicEventWriter(stream.offer.modelId);
  const out = startSse(ctx.res, { 'X-Gateway-Provider': stream.offer.gateway, 'X-Gateway-Model': stream.offer.upstreamModel }); // X-Request-Id: the prelude's
  try {
    // As `for await` over the events, without its promises per event (EngineEvents.consume), into the sink's method.
    await stream.events.consume(FrameSink.prototype.event, new FrameSink(out, writer, abort.signal));
    const served = stream.served();
    const full = served ? writeFrame(out, writer.end(served.usage ?? emptyUsage())) : undefined;
    if (full) await full; // only when the socket is full (see src/engine/respond.ts writeFrame)
  } catch (err) {
    if (!abort.signal.aborted) {
      const e = err instanceof UpstreamError ? clientError(err) : err instanceof ApiError ? err : new ApiError(502, 'upstream_error', 'Upstream failure.', 'upstream_error');
      await writeFrame(out, AnthropicEventWriter.error(anthropicErrorType(e.status), `The upstream stream failed: ${e.message}`));
    }
  } finally {
    endSse(out);
  }
};
