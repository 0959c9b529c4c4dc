/**
 * Image generation: `POST /v1/images/generations`. The model (or the configured default) resolves to offers
 * whose gateways can make images; `size`, `n` and `quality` are checked against each offer's image profile; the
 * price of `n` images is held, the upstreams are tried in order (failover as for chat), and the images actually
 * returned are charged (see image-profiles.ts for the price rule). The answer is in the requested
 * `response_format` whatever the upstream returned: base64 becomes a `data:` URL, a URL is fetched and encoded.
 */
import type { components } from '../../generated/api.js';
import type { CallContext } from '../engine/chat.js';
import type { Offer } from '../catalog/types.js';
import { ApiError, ValidationFailure } from '../errors.js';
import { UpstreamError } from '../engine/types.js';
import { nanoToUsd } from '../store/credits.js';
import { send, transportError } from '../providers/http.js';
import { MediaJobs } from './common.js';
import { imagePriceUsd, imageProfile, profileProblem, type ImageProfile } from './image-profiles.js';
import { imageProviders } from './registry.js';
import type { GeneratedImage, ImageCall, ImageResult } from './types.js';

export type ImageRequest = components['schemas']['ImageGenerationRequest'];
export type ImageResponse = components['schemas']['ImageGenerationResponse'];

const IMAGE_JOB = {
  verb: 'generate images',
  adapters: imageProviders,
  fits: (o: Offer) => o.pricing.image !== null || o.modalities.output.includes('image'),
};

/** Largest image the gateway downloads to turn an upstream URL into base64. */
const MAX_IMAGE_BYTES = 32 * 1024 * 1024;
/** Vertex path segments: project ids/numbers, regions, endpoint ids. */
const VERTEX_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

interface Plan {
  offer: Offer;
  profile: ImageProfile;
  quality: string;
  call: ImageCall;
}

export class ImageService {
  constructor(private readonly jobs: MediaJobs) {}

  async generate(body: ImageRequest, ctx: CallContext, opts: { logViolations: boolean }): Promise<{ body: ImageResponse; offer: Offer }> {
    const { config, engine, logger } = this.jobs.d;
    const model = body.model ?? config.media.defaultImageModel;
    const offers = this.jobs.offersFor(model, ctx.pinGateway, IMAGE_JOB);
    const plans = this.plan(body, offers);
    const byOffer = new Map(plans.map((p) => [p.offer, p]));
    const n = body.n ?? 1;
    const priceNano = (p: Plan, images: number, quality = p.quality) =>
      Math.round(images * imagePriceUsd(p.offer.pricing.image ?? 0, p.profile, p.call.width, p.call.height, quality) * config.priceMarkup * 1e9);
    const holdId = await this.jobs.hold(ctx, Math.max(...plans.map((p) => priceNano(p, n))), `${n} image${n === 1 ? '' : 's'} of ${model}`);
    const started = Date.now();
    let got: { value: ImageResult; offer: Offer; startedAt: number };
    try {
      got = await engine.tryCandidates(plans.map((p) => p.offer), ctx, async (offer, target) => {
        const p = byOffer.get(offer)!;
        const result = await imageProviders[offer.gateway].generate(p.call, target, ctx.signal);
        return { ...result, images: await Promise.all(result.images.map((img) => inFormat(img, p.call.responseFormat, ctx.signal, target.timeouts))) };
      }, (offer) => this.jobs.target(imageProviders[offer.gateway], offer));
    } catch (err) {
      if (opts.logViolations && err instanceof UpstreamError && err.kind === 'bad_request') {
        // The upstream refused the request (usage policies are the usual reason): the security log keeps who and why.
        logger.warn({ securityEvent: 'image_request_refused', requestId: ctx.requestId, userId: ctx.principal.userId, keyId: ctx.principal.keyId, model, reason: err.message }, 'image request refused upstream');
      }
      return this.jobs.fail(ctx, holdId, model, err, started);
    }
    const { value, offer, startedAt } = got;
    const plan = byOffer.get(offer)!;
    const latencyMs = Date.now() - started;
    await engine.observe(offer, true, 'success', Date.now() - startedAt, null);
    // An `auto` request is charged at the quality the upstream says it used, when it says one the profile knows.
    const quality = value.quality && value.quality in plan.profile.qualities ? value.quality : plan.quality;
    const charged = await this.jobs.d.store.credits.settle(holdId, priceNano(plan, value.images.length, quality));
    this.jobs.record(ctx, offer, model, 'success', 200, charged, latencyMs, null);
    return {
      offer,
      body: {
        created: Math.floor(Date.now() / 1000),
        data: value.images.map((img) => ({ ...(img.url !== undefined ? { url: img.url } : { b64_json: img.b64! }), ...(img.revisedPrompt ? { revised_prompt: img.revisedPrompt } : {}) })),
        gateway_usage: { gateway: offer.gateway, provider: offer.developer, model: offer.upstreamModel, images: value.images.length, cost_usd: nanoToUsd(charged), latency_ms: latencyMs },
      },
    };
  }

  /** The call each offer would get; offers whose model cannot serve the request drop out (400 when none is left). */
  private plan(body: ImageRequest, offers: Offer[]): Plan[] {
    const [width, height] = (body.size ?? '1024x1024').split('x').map(Number);
    if (!(width >= 1 && height >= 1)) throw new ValidationFailure([{ loc: ['body', 'size'], msg: 'width and height must be at least 1', type: 'value_error' }]);
    const vertex = this.vertexCoordinates(body);
    const n = body.n ?? 1;
    const plans: Plan[] = [];
    let problem: { param: string; msg: string } | null = null;
    for (const offer of offers) {
      const profile = imageProfile(offer.upstreamModel);
      const quality = body.quality ?? profile.defaultQuality;
      const call: ImageCall = { prompt: body.prompt, n, width, height, quality: body.quality, responseFormat: body.response_format ?? 'url', style: body.style, user: body.user, profile, vertex };
      const why = profileProblem(profile, width, height, n, quality) ?? imageProviders[offer.gateway].check?.(call) ?? null;
      if (why) {
        problem ??= { param: why.param, msg: `${offer.gateway}/${offer.upstreamModel}: ${why.msg}` };
        continue;
      }
      plans.push({ offer, profile, quality, call });
    }
    if (!plans.length) throw new ApiError(400, 'invalid_request_error', `The request cannot be served: ${problem!.msg}.`, 'unsupported_parameter', problem!.param);
    return plans;
  }

  private vertexCoordinates(body: ImageRequest): NonNullable<ImageCall['vertex']> {
    const v = this.jobs.d.config.media.vertex;
    const fields = { google_project_id: body.google_project_id, google_location: body.google_location, google_endpoint_id: body.google_endpoint_id };
    const bad = Object.entries(fields).filter(([, value]) => value !== undefined && !VERTEX_ID.test(value));
    if (bad.length) {
      throw new ValidationFailure(bad.map(([k]) => ({ loc: ['body', k], msg: 'must be letters, digits, "-" or "_" (at most 128)', type: 'string_pattern_mismatch' })));
    }
    return { project: body.google_project_id ?? v.project, location: body.google_location ?? v.location, endpointId: body.google_endpoint_id ?? v.endpointId };
  }
}

/** An image in the requested form: base64 as a `data:` URL for `url`, a URL's bytes as base64 for `b64_json`. */
async function inFormat(img: GeneratedImage, format: 'url' | 'b64_json', signal: AbortSignal, timeouts: { connectMs: number; firstByteMs: number; totalMs: number }): Promise<GeneratedImage> {
  if (format === 'url') return img.url !== undefined ? img : { url: `data:${img.mimeType ?? 'image/png'};base64,${img.b64}`, revisedPrompt: img.revisedPrompt };
  if (img.b64 !== undefined) return { b64: img.b64, revisedPrompt: img.revisedPrompt };
  if (!/^https?:\/\//i.test(img.url!)) throw new UpstreamError('invalid_response', 'the image upstream returned an image URL that is not http(s)');
  // No credentials go with this request: the URL is the upstream's (signed) link, possibly on another host.
  const res = await send(img.url!, { method: 'GET', headers: { accept: 'image/*' }, signal, timeouts });
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += chunk.length;
      if (size > MAX_IMAGE_BYTES) throw new UpstreamError('invalid_response', `the generated image is larger than ${MAX_IMAGE_BYTES} bytes`);
      parts.push(Buffer.from(chunk));
    }
  } catch (err) {
    throw transportError(err, signal);
  }
  return { b64: Buffer.concat(parts).toString('base64'), revisedPrompt: img.revisedPrompt };
}
