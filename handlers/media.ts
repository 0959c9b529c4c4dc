/** Image generation and audio transcription: validated input to the media service (src/media/), its answer out. */
import type { Handler, HandlerCtx } from '../src/app.js';
import type { CallContext } from '../src/engine/chat.js';
import { ValidationFailure } from '../src/errors.js';
import { clientGone } from '../src/engine/respond.js';
import { uploadOf } from '../src/media/index.js';

const call = (ctx: HandlerCtx, endpoint: string, pinGateway?: string): CallContext => ({
  principal: ctx.principal!, requestId: ctx.requestId, endpoint, pinGateway, signal: clientGone(ctx.res).signal,
});

const served = (o: { gateway: string; upstreamModel: string }) => ({ 'X-Gateway-Provider': o.gateway, 'X-Gateway-Model': o.upstreamModel });

export const createImage: Handler = async (ctx) => {
  const { body, offer } = await ctx.deps.services.media.images.generate(ctx.body, call(ctx, 'images.generations', ctx.body.provider),
    { logViolations: ctx.query.log_security_violations !== false });
  return { body, headers: served(offer) };
};

export const createTranscription: Handler = async (ctx) => {
  // openapi-backend leaves binary fields out of `required`, so the spec's `file: required` is enforced here.
  const upload = uploadOf(ctx.req);
  if (!upload || upload.field !== 'file') throw new ValidationFailure([{ loc: ['body', 'file'], msg: 'Field required', type: 'missing' }]);
  const { body, offer } = await ctx.deps.services.media.transcription.multipart(upload, ctx.body, call(ctx, 'audio.transcriptions', ctx.body.provider));
  return { body, headers: served(offer) };
};

export const createTranscriptionBase64: Handler = async (ctx) => {
  const { body, offer } = await ctx.deps.services.media.transcription.base64(ctx.body, call(ctx, 'audio.transcriptions.base64', ctx.body.provider));
  return { body, headers: served(offer) };
};
