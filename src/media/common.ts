/**
 * What image generation and transcription share with each other and with chat: resolving a model to the
 * offers that can do the job, the upstream target of an offer, the credit hold (settled after success, released
 * after failure) and the usage record. Failover, retries, the breaker and health observations are the chat
 * engine's own (`ChatEngine.tryCandidates`), so every kind of request is routed and observed alike.
 */
import type { Config } from '../config.js';
import type { Store } from '../store/index.js';
import type { Logger } from '../logger.js';
import type { Recorder } from '../engine/recorder.js';
import type { CatalogReader, Offer } from '../catalog/types.js';
import type { Target } from '../providers/types.js';
import { ApiError, forbidden, insufficientCredits } from '../errors.js';
import { nanoToUsd, newHoldId } from '../store/credits.js';
import { UpstreamError } from '../engine/types.js';
import { clientError, outcomeOf, type CallContext, type ChatEngine, type Outcome, type Upstreams } from '../engine/chat.js';
import type { Endpoint } from './types.js';

export interface MediaDeps {
  config: Config;
  store: Store;
  logger: Logger;
  recorder: Recorder;
  engine: ChatEngine;
  catalog: CatalogReader & Upstreams;
}

interface Job<A> {
  /** `generate images`, `transcribe audio`: what the error messages say a provider cannot do. */
  verb: string;
  adapters: Record<string, A & { endpoint?(config: Config): Endpoint }>;
  /** The offer's model is made for this job (by its catalog prices and modalities). */
  fits: (o: Offer) => boolean;
}

export class MediaJobs {
  constructor(readonly d: MediaDeps) {}

  /**
   * Offers that can do the job, in the catalog's order. 404: unknown model or provider; 400: the model, or the
   * provider pinned with `provider`, cannot do the job (named in the message); 503: no such gateway configured.
   */
  offersFor<A>(model: string, pin: string | undefined, job: Job<A>): Offer[] {
    const { catalog } = this.d;
    const able = Object.keys(job.adapters).join(', ');
    let gateway: string | undefined;
    if (pin) {
      const gw = catalog.gateway(pin);
      if (!gw) throw new ApiError(404, 'not_found_error', `Unknown provider '${pin}'.`, 'provider_not_found', 'provider');
      if (!job.adapters[gw.id]) throw new ApiError(400, 'invalid_request_error', `Provider '${gw.id}' cannot ${job.verb}. Providers that can: ${able}.`, 'provider_unsupported', 'provider');
      gateway = gw.id;
    }
    let offers = catalog.resolve(model);
    if (!offers.length) throw new ApiError(404, 'not_found_error', `The model '${model}' does not exist or is not served by any gateway.`, 'model_not_found', 'model');
    if (gateway) {
      offers = offers.filter((o) => o.gateway === gateway);
      if (!offers.length) throw new ApiError(404, 'not_found_error', `The model '${model}' is not served by '${gateway}'.`, 'model_not_found', 'provider');
    }
    offers = offers.filter(job.fits);
    if (!offers.length) throw new ApiError(400, 'invalid_request_error', `The model '${model}' cannot ${job.verb}.`, 'model_unsupported', 'model');
    const handled = offers.filter((o) => job.adapters[o.gateway]);
    if (!handled.length) {
      const names = [...new Set(offers.map((o) => o.gateway))].join(', ');
      throw new ApiError(400, 'invalid_request_error', `The model '${model}' is offered only by ${names}, which cannot ${job.verb} through this gateway. Providers that can: ${able}.`, 'provider_unsupported', 'model');
    }
    const usable = handled.filter((o) => this.endpoint(job.adapters[o.gateway], o));
    if (!usable.length) {
      const names = [...new Set(handled.map((o) => o.gateway))].join(', ');
      throw new ApiError(503, 'service_unavailable', `The model '${model}' is known, but no configured gateway serves it (it is offered by: ${names}).`, 'no_configured_provider');
    }
    return usable;
  }

  private endpoint(adapter: { endpoint?(config: Config): Endpoint }, offer: Offer): Endpoint {
    return adapter.endpoint ? adapter.endpoint(this.d.config) : this.d.catalog.upstream(offer.gateway);
  }

  target(adapter: { endpoint?(config: Config): Endpoint }, offer: Offer): Target {
    const up = this.endpoint(adapter, offer)!;
    const c = this.d.config;
    return {
      gateway: this.d.catalog.gateway(offer.gateway)!,
      baseUrl: up.baseUrl.replace(/\/+$/, ''),
      apiKey: up.apiKey,
      upstreamModel: offer.upstreamModel,
      timeouts: { connectMs: c.upstreamConnectTimeoutMs, firstByteMs: c.upstreamFirstByteTimeoutMs, totalMs: c.upstreamTotalTimeoutMs },
    };
  }

  /** Holds `amount` nano-USD; 402 (naming `what`) when the balance cannot cover it. */
  async hold(ctx: CallContext, amount: number, what: string): Promise<string> {
    if (ctx.principal.admin) throw forbidden('The admin credential has no balance; call with an API key.');
    const id = newHoldId();
    if (!(await this.d.store.credits.hold(ctx.principal.userId, id, amount, this.d.config.upstreamTotalTimeoutMs + 60_000))) {
      const balance = await this.d.store.credits.balance(ctx.principal.userId);
      throw insufficientCredits(`Insufficient credits: ${what} may cost up to $${nanoToUsd(amount).toFixed(6)} and the balance is $${nanoToUsd(balance).toFixed(6)}.`);
    }
    return id;
  }

  record(ctx: CallContext, offer: Offer | undefined, model: string, status: Outcome, httpStatus: number, costNano: number, latencyMs: number, errorClass: string | null) {
    this.d.recorder.recordUsage({
      request_id: ctx.requestId, user_id: ctx.principal.userId, key_id: ctx.principal.keyId, endpoint: ctx.endpoint,
      gateway: offer?.gateway ?? 'none', provider: offer?.developer ?? 'unknown', model: offer?.modelId ?? model,
      status, error_class: errorClass, http_status: httpStatus, prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0,
      cost_nano: costNano, latency_ms: Math.round(latencyMs), ttft_ms: null, created_at: Date.now(),
    });
  }

  /** Releases the hold, records the failure and throws what the client sees (a failed request costs nothing). */
  async fail(ctx: CallContext, holdId: string, model: string, err: unknown, started: number): Promise<never> {
    await this.d.store.credits.release(holdId);
    const latency = Date.now() - started;
    if (ctx.signal.aborted) {
      this.record(ctx, undefined, model, 'cancelled', 499, 0, latency, 'client_disconnected');
      throw err;
    }
    const e = err instanceof UpstreamError ? clientError(err) : err instanceof ApiError ? err : new ApiError(502, 'upstream_error', 'Upstream failure.', 'upstream_error');
    this.record(ctx, undefined, model, err instanceof UpstreamError ? outcomeOf(err) : 'error', e.status, 0, latency, err instanceof UpstreamError ? err.kind : e.code);
    throw e;
  }
}
