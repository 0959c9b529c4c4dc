/**
 * The chat pipeline: resolve the model to candidate offers -> hold the worst-case cost -> call candidates in
 * order (failover on retryable failures, bounded retries with backoff and jitter, a breaker per gateway+model)
 * -> settle the real cost -> one usage record per request, one health observation per attempt.
 * Streams fail over only until their first event; after that a failure reaches the client as an error event.
 */
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import type { Store } from '../store/index.js';
import type { Logger } from '../logger.js';
import type { Principal } from '../auth.js';
import type { CatalogReader, Offer } from '../catalog/types.js';
import type { ProviderAdapter, Target } from '../providers/types.js';
import { ApiError, insufficientCredits, notFound, forbidden } from '../errors.js';
import { nanoToUsd, newHoldId, type HeldCredit } from '../store/credits.js';
import { jsonNumber, jsonString } from '../wire/json-text.js';
import type { Recorder } from './recorder.js';
import type { CircuitBreakers } from './breaker.js';
import type { AttemptMetrics } from '../metrics.js';
import { redactSecrets } from '../providers/http.js';
import { Cancellation } from '../cancel.js';
import { costOf, estimatePromptTokens, estimateTextTokens, worstCaseNano, type Cost } from './pricing.js';
import { STREAM_DONE, UpstreamError, isPolledEvents, withStream, type ChatRequest, type ChatResult, type PolledEvents, type StreamEvent, type Usage } from './types.js';

/**
 * Where a configured gateway is reached (its base URL without a trailing slash: the catalogs trim it once); undefined
 * when it has no key (not configured).
 */
export interface Upstreams {
  upstream(gatewayId: string): { baseUrl: string; apiKey: string } | undefined;
}

export interface EngineDeps {
  config: Config;
  store: Store;
  logger: Logger;
  recorder: Recorder;
  breakers: CircuitBreakers;
  catalog: CatalogReader & Upstreams;
  providers: Record<string, ProviderAdapter>;
  /** Told of every upstream attempt (/metrics). */
  metrics?: AttemptMetrics;
}

export interface CallContext {
  principal: Principal;
  requestId: string;
  /** e.g. `chat.completions`, `messages` — stored on the usage record. */
  endpoint: string;
  /** Pin to one gateway (the request's `provider`). */
  pinGateway?: string;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/**
 * A request's credit hold; `committed` resolves once it is committed and rejects (402) if it was refused. `done`
 * turns true when it has committed, so a caller that comes after the commit does not await it again. Whose it is and
 * its amount (HeldCredit) go to its settle or release, which then need not read them back (CreditRepo.settle).
 */
interface Hold extends HeldCredit {
  committed: Promise<void>;
  done: boolean;
}

/** The hold's commit while it is still pending, else undefined: an await is a microtask step even when done. */
const stillCommitting = (hold: Hold): Promise<void> | undefined => (hold.done ? undefined : hold.committed);

/** What was served, for `gateway_usage` and response headers. */
export interface Served {
  offer: Offer;
  attempts: number;
  latencyMs: number;
  ttftMs: number | null;
  usage: Usage;
  cost: Cost;
}

/**
 * An answer's `gateway_usage` (the spec's ChatGatewayUsage): what was served and what it cost. A class rather than a
 * literal so that the writers that know the shape write its JSON by hand (`json`: completionJson and
 * anthropicMessageJson): a completion's `JSON.stringify` of it was ~9,000 instructions a request (docs/PERFORMANCE.md,
 * session 54). Its fields are the literal's, in the same order, so every serialisation of it is the literal's.
 */
export class GatewayUsage {
  readonly gateway: string;
  readonly provider: string;
  readonly model: string;
  readonly cost_usd: number;
  readonly input_cost_usd: number;
  readonly output_cost_usd: number;
  readonly latency_ms: number;
  readonly time_to_first_token_ms: number | null;
  readonly attempts: number;
  readonly cached: boolean;

  constructor(s: Served) {
    this.gateway = s.offer.gateway;
    this.provider = s.offer.developer;
    this.model = s.offer.upstreamModel;
    this.cost_usd = nanoToUsd(s.cost.totalNano);
    this.input_cost_usd = nanoToUsd(s.cost.inputNano);
    this.output_cost_usd = nanoToUsd(s.cost.outputNano);
    this.latency_ms = s.latencyMs;
    this.time_to_first_token_ms = s.ttftMs;
    this.attempts = s.attempts;
    this.cached = false;
  }

  /**
   * `JSON.stringify(this)`'s text, written from the known shape (test/unit/json-text.test.ts compares them); a field
   * not of its type (which the constructor's types rule out) sends the whole to JSON.stringify.
   */
  json(): string {
    const cost = jsonNumber(this.cost_usd);
    const input = jsonNumber(this.input_cost_usd);
    const output = jsonNumber(this.output_cost_usd);
    const latency = jsonNumber(this.latency_ms);
    const ttft = this.time_to_first_token_ms === null ? 'null' : jsonNumber(this.time_to_first_token_ms);
    const attempts = jsonNumber(this.attempts);
    const { gateway, provider, model, cached } = this;
    if (cost === undefined || input === undefined || output === undefined || latency === undefined || ttft === undefined || attempts === undefined
      || typeof gateway !== 'string' || typeof provider !== 'string' || typeof model !== 'string' || typeof cached !== 'boolean') return JSON.stringify(this);
    return `{"gateway":${jsonString(gateway)},"provider":${jsonString(provider)},"model":${jsonString(model)},"cost_usd":${cost},`
      + `"input_cost_usd":${input},"output_cost_usd":${output},"latency_ms":${latency},"time_to_first_token_ms":${ttft},"attempts":${attempts},`
      + `"cached":${cached}}`;
  }
}

export const gatewayUsage = (s: Served): GatewayUsage => new GatewayUsage(s);

export type Outcome = 'success' | 'error' | 'timeout' | 'rate_limited' | 'cancelled';

export const outcomeOf = (e: UpstreamError): Outcome => (e.kind === 'timeout' ? 'timeout' : e.kind === 'rate_limited' ? 'rate_limited' : 'error');

/** An UpstreamError as the client sees it: the provider's 4xx keep their meaning, the rest are 502/504. */
export function clientError(e: UpstreamError): ApiError {
  switch (e.kind) {
    case 'rate_limited': {
      const secs = Math.max(1, Math.ceil((e.retryAfterMs ?? 1000) / 1000));
      return new ApiError(429, 'rate_limit_error', `${e.message}. Retry after ${secs}s.`, 'upstream_rate_limited', null, { 'Retry-After': String(secs) });
    }
    case 'timeout':
      return new ApiError(504, 'upstream_error', e.message, 'upstream_timeout');
    case 'bad_request':
      return new ApiError(400, 'invalid_request_error', e.message, 'upstream_bad_request');
    default:
      return new ApiError(502, 'upstream_error', e.message, `upstream_${e.kind}`);
  }
}

export class ChatEngine {
  constructor(private readonly d: EngineDeps) {}

  /** Offers to try, in order; throws 404 for an unknown model, 503 when no configured gateway serves it. */
  candidates(req: ChatRequest, pinGateway?: string): Offer[] {
    const { catalog, providers } = this.d;
    let offers = catalog.resolve(req.model);
    if (!offers.length) throw new ApiError(404, 'not_found_error', `The model '${req.model}' does not exist or is not served by any gateway.`, 'model_not_found', 'model');
    if (pinGateway) {
      const gw = catalog.gateway(pinGateway);
      if (!gw) throw new ApiError(404, 'not_found_error', `Unknown provider '${pinGateway}'.`, 'provider_not_found', 'provider');
      offers = offers.filter((o) => o.gateway === gw.id);
      if (!offers.length) throw new ApiError(404, 'not_found_error', `The model '${req.model}' is not served by '${gw.id}'.`, 'model_not_found', 'provider');
    }
    const usable = offers.filter((o) => providers[o.gateway] && catalog.upstream(o.gateway));
    if (!usable.length) {
      const names = [...new Set(offers.map((o) => o.gateway))].slice(0, 8).join(', ');
      throw new ApiError(503, 'service_unavailable', `The model '${req.model}' is known, but no configured gateway serves it (it is offered by: ${names}).`, 'no_configured_provider');
    }
    return usable;
  }

  /**
   * What an attempt at `offer` calls, with the body's idle limit when the caller sets one (a stream's). Built whole, as
   * one object literal: a spread followed by a key the spread object lacks (`{ ...t.timeouts, bodyIdleMs }`) made a
   * new hidden class on every call in this V8 (~0.5 µs in a loop, and every load from the object after it missed its
   * inline cache): docs/PERFORMANCE.md, session 39.
   */
  private target(offer: Offer, bodyIdleMs?: number): Target {
    const up = this.d.catalog.upstream(offer.gateway)!;
    const { config } = this.d;
    return {
      gateway: this.d.catalog.gateway(offer.gateway)!,
      baseUrl: up.baseUrl,
      apiKey: up.apiKey,
      upstreamModel: offer.upstreamModel,
      timeouts: { connectMs: config.upstreamConnectTimeoutMs, firstByteMs: config.upstreamFirstByteTimeoutMs, totalMs: config.upstreamTotalTimeoutMs, bodyIdleMs },
    };
  }

  /**
   * Holds the request's worst-case cost. When the balance this process last saw for the caller covers it twice
   * over (CreditRepo.likelyCovers), the hold commits while the upstream call starts: the returned `call` then has
   * a signal of its own, linked to the client's and aborted if the hold is refused after all. Otherwise the hold
   * is committed first and `call` is `ctx`. Either way the caller awaits `committed` before anything reaches the
   * client or is settled: no answer is served without a committed hold. What an early start risks is an upstream
   * call cut short when another process spent the balance meanwhile; what it saves is the commit's time (and, on
   * PostgreSQL, its round trip) before the upstream call. The early case returns at once, not a promise: awaiting
   * an answer already known costs a microtask step on the way to the upstream call.
   */
  private hold(req: ChatRequest, offers: Offer[], ctx: CallContext): { hold: Hold; call: CallContext } | Promise<{ hold: Hold; call: CallContext }> {
    if (ctx.principal.admin) throw forbidden('The admin credential has no balance; call with an API key.');
    const promptTokens = estimatePromptTokens(req);
    const amount = Math.max(0, ...offers.map((o) => worstCaseNano(o, req, this.d.config.priceMarkup, promptTokens)));
    const id = newHoldId();
    const ttl = this.d.config.upstreamTotalTimeoutMs + 60_000;
    const { credits } = this.d.store;
    const userId = ctx.principal.userId;
    const early = credits.likelyCovers(userId, amount);
    const committed = credits.hold(userId, id, amount, ttl).then(async (ok) => {
      if (ok) {
        hold.done = true;
        return;
      }
      const balance = await credits.balance(userId);
      throw insufficientCredits(`Insufficient credits: this request may cost up to $${nanoToUsd(amount).toFixed(6)} and the balance is $${nanoToUsd(balance).toFixed(6)}. Lower max_tokens or add credits.`);
    });
    // (`hold` is set before the callback above can run: a promise's callbacks never run synchronously.)
    const hold: Hold = { id, userId, amountNano: amount, committed, done: false };
    if (!early) return committed.then(() => ({ hold, call: ctx }));
    const call = new Cancellation();
    const onClientGone = () => call.abort(ctx.signal.reason);
    if (ctx.signal.aborted) onClientGone();
    else ctx.signal.addEventListener('abort', onClientGone, { once: true });
    committed.catch(() => call.abort()); // refused (or the store failed): the call started early stops
    return { hold, call: { ...ctx, signal: call.signal } };
  }

  /**
   * Calls `fn` on candidates in order until one succeeds. Each candidate gets one try, the last one up to two
   * (backoff with jitter, honouring a short Retry-After); at most `maxAttempts` calls in all. Shared with the
   * media service (src/media/), whose upstreams may live elsewhere than the chat endpoint: hence `targetOf`.
   */
  async tryCandidates<T>(offers: Offer[], ctx: CallContext, fn: (offer: Offer, target: Target) => Promise<T>,
    targetOf: (offer: Offer) => Target = (o) => this.target(o)):
    Promise<{ value: T; offer: Offer; attempts: number; startedAt: number }> {
    const { breakers, config } = this.d;
    let attempts = 0;
    let last: UpstreamError | undefined;
    for (let i = 0; i < offers.length && attempts < config.maxAttempts; i++) {
      const offer = offers[i];
      // The in-process breakers answer at once: awaited only when a promise (Redis).
      const allowed = breakers.allow(offer.gateway, offer.modelId);
      if (!(typeof allowed === 'boolean' ? allowed : await allowed)) continue;
      const tries = i === offers.length - 1 ? 2 : 1;
      for (let t = 0; t < tries && attempts < config.maxAttempts; t++) {
        // A breaker the previous try just opened (or a failed half-open trial) stops the retry as well.
        if (t > 0 && !(await breakers.allow(offer.gateway, offer.modelId))) break;
        attempts++;
        const startedAt = Date.now();
        const target = targetOf(offer);
        try {
          const value = await fn(offer, target);
          return { value, offer, attempts, startedAt };
        } catch (err) {
          const ms = Date.now() - startedAt;
          if (ctx.signal.aborted) {
            this.d.metrics?.upstreamRequest(offer.gateway, 'cancelled', ms);
            throw err;
          }
          const e = withoutKey(err instanceof UpstreamError ? err : new UpstreamError('connection', String((err as Error)?.message ?? err)), target.apiKey);
          this.d.metrics?.upstreamRequest(offer.gateway, e.kind, ms);
          await this.observe(offer, false, outcomeOf(e), ms, e.message, e.kind === 'bad_request');
          last = e;
          if (!e.retryable) throw e;
          if (t + 1 < tries && attempts < config.maxAttempts && (e.kind !== 'rate_limited' || (e.retryAfterMs ?? 0) <= 2000)) {
            await sleep(e.retryAfterMs ?? Math.min(2000, 200 * 2 ** t) * (0.5 + Math.random() / 2), ctx.signal);
          }
        }
      }
    }
    if (last) throw last;
    const waitMs = Math.min(...offers.map((o) => breakers.retryInMs(o.gateway, o.modelId)));
    throw new ApiError(503, 'service_unavailable', `Every gateway serving '${offers[0]?.modelId}' is failing right now (circuit open); try again shortly.`, 'circuit_open',
      null, { 'Retry-After': String(Math.max(1, Math.ceil(waitMs / 1000))) });
  }

  /**
   * One passive health observation (skipped for the client's own bad requests), and the breaker's count. A
   * success is also the attempt's report to the metrics (failures are reported where they are caught).
   */
  observe(offer: Offer, ok: boolean, status: Outcome, latencyMs: number, error: string | null, clientFault = false): void | Promise<void> {
    if (ok) this.d.metrics?.upstreamRequest(offer.gateway, 'success', latencyMs);
    if (clientFault || status === 'cancelled') return;
    this.d.recorder.recordHealth({ gateway: offer.gateway, model: offer.modelId, provider: offer.developer, ok, status, latencyMs, error, ts: Date.now(), source: 'passive' });
    // The in-process breakers answer at once (nothing to await); Redis's return a promise.
    return ok ? this.d.breakers.success(offer.gateway, offer.modelId) : this.d.breakers.failure(offer.gateway, offer.modelId);
  }

  private record(ctx: CallContext, offer: Offer | undefined, req: ChatRequest, status: Outcome, httpStatus: number, usage: Usage | null,
    costNano: number, latencyMs: number, ttftMs: number | null, errorClass: string | null) {
    this.d.recorder.recordUsage({
      request_id: ctx.requestId, user_id: ctx.principal.userId, key_id: ctx.principal.keyId, endpoint: ctx.endpoint,
      gateway: offer?.gateway ?? 'none', provider: offer?.developer ?? 'unknown', model: offer?.modelId ?? req.model,
      status, error_class: errorClass, http_status: httpStatus,
      prompt_tokens: usage?.promptTokens ?? 0, completion_tokens: usage?.completionTokens ?? 0, cached_tokens: usage?.cachedTokens ?? 0,
      cost_nano: costNano, latency_ms: Math.round(latencyMs), ttft_ms: ttftMs === null ? null : Math.round(ttftMs), created_at: Date.now(),
    });
  }

  /** Settles the hold and writes the usage record of a request that failed before or without a result. */
  private async fail(ctx: CallContext, req: ChatRequest, hold: Hold, offer: Offer | undefined, err: unknown, started: number): Promise<never> {
    await this.d.store.credits.release(hold);
    if (ctx.signal.aborted) {
      this.record(ctx, offer, req, 'cancelled', 499, null, 0, Date.now() - started, null, 'client_disconnected');
      throw err;
    }
    const e = err instanceof UpstreamError ? clientError(err) : err instanceof ApiError ? err : new ApiError(502, 'upstream_error', 'Upstream failure.', 'upstream_error');
    const status: Outcome = err instanceof UpstreamError ? outcomeOf(err) : 'error';
    this.record(ctx, offer, req, status, e.status, null, 0, Date.now() - started, null, err instanceof UpstreamError ? err.kind : e.code);
    throw e;
  }

  /**
   * The active health monitor's probe: a one-token request to one (gateway, model), outside billing and the
   * breaker (the monitor records its own observation).
   */
  async probe(gateway: string, modelId: string): Promise<{ ok: boolean; status: string; latencyMs: number; error: string | null }> {
    const offer = this.d.catalog.resolve(modelId).find((o) => o.gateway === gateway);
    const adapter = this.d.providers[gateway];
    if (!offer || !adapter || !this.d.catalog.upstream(gateway)) return { ok: false, status: 'error', latencyMs: 0, error: 'not configured' };
    const req: ChatRequest = { model: modelId, messages: [{ role: 'user', content: 'ping' }], maxTokens: 1, stream: false, includeUsage: false, extra: {} };
    const started = Date.now();
    try {
      await adapter.chat(req, this.target(offer), AbortSignal.timeout(this.d.config.upstreamFirstByteTimeoutMs));
      return { ok: true, status: 'success', latencyMs: Date.now() - started, error: null };
    } catch (err) {
      const e = err instanceof UpstreamError ? err : new UpstreamError('connection', String((err as Error)?.message ?? err));
      return { ok: false, status: outcomeOf(e), latencyMs: Date.now() - started, error: e.message };
    }
  }

  async complete(req: ChatRequest, ctx: CallContext): Promise<{ result: ChatResult; served: Served }> {
    const offers = this.candidates(req, ctx.pinGateway);
    const held = this.hold(req, offers, ctx);
    const { hold, call } = held instanceof Promise ? await held : held;
    const started = Date.now();
    let got: Awaited<ReturnType<typeof this.tryCandidates<ChatResult>>>;
    try {
      got = await this.tryCandidates(offers, call, (offer, target) => this.d.providers[offer.gateway].chat(withStream(req, false), target, call.signal));
    } catch (err) {
      await hold.committed; // a refused hold is the answer (its 402), not the failure of the call it stopped
      return this.fail(ctx, req, hold, undefined, err, started);
    }
    const pending = stillCommitting(hold);
    if (pending) await pending;
    const { value: result, offer, attempts, startedAt } = got;
    const latencyMs = Date.now() - started;
    const observed = this.observe(offer, true, 'success', Date.now() - startedAt, null);
    if (observed) await observed;
    const usage = result.usage ?? {
      promptTokens: estimatePromptTokens(req), cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0,
      completionTokens: result.choices.reduce((n, c) => n + estimateTextTokens(c.content ?? '') + estimateTextTokens(c.toolCalls?.map((t) => t.arguments).join('') ?? ''), 0),
    };
    const cost = costOf(offer, usage, this.d.config.priceMarkup);
    const charged = await this.d.store.credits.settle(hold, cost.totalNano);
    this.record(ctx, offer, req, 'success', 200, usage, charged, latencyMs, null, null);
    return { result: { ...result, usage }, served: { offer, attempts, latencyMs, ttftMs: null, usage, cost: { ...cost, totalNano: charged } } };
  }

  /**
   * Opens a stream. Resolves once a candidate produced its first event (failover happens before that); the
   * returned events are the upstream's, and `served()` is known once they end. Ending the iteration early
   * (client gone) aborts nothing by itself: the caller aborts `ctx.signal`.
   */
  async stream(req: ChatRequest, ctx: CallContext): Promise<{ offer: Offer; events: EngineEvents; served: () => Served | undefined }> {
    const offers = this.candidates(req, ctx.pinGateway);
    const held = this.hold(req, offers, ctx);
    const { hold, call } = held instanceof Promise ? await held : held;
    const started = Date.now();
    const idleMs = this.d.config.upstreamFirstByteTimeoutMs;
    type Opened = { it: AsyncIterator<StreamEvent>; first: IteratorResult<StreamEvent>; watch: IdleWatch };
    let got: Awaited<ReturnType<typeof this.tryCandidates<Opened>>>;
    try {
      got = await this.tryCandidates(offers, call, async (offer, target) => {
        // The attempt's own abort, for a stalled upstream (IdleWatch); the call's abort (the client left, the hold
        // was refused) ends it too (linked by hand: AbortSignal.any takes only real AbortSignals, and the call's
        // is a Cancellation).
        const attempt = new Cancellation();
        const onCallAborted = () => attempt.abort(call.signal.reason);
        if (call.signal.aborted) onCallAborted();
        else call.signal.addEventListener('abort', onCallAborted, { once: true });
        const watch = new IdleWatch(idleMs, () => attempt.abort(), () => call.signal.removeEventListener('abort', onCallAborted));
        try {
          const upstream = await this.d.providers[offer.gateway].chatStream(withStream(req, true), target, attempt.signal);
          const it = upstream[Symbol.asyncIterator]();
          return { it, first: await watch.next(it), watch };
        } catch (err) {
          watch.stop();
          throw err;
        }
      }, (o) => this.target(o, idleMs + 1000));
    } catch (err) {
      await hold.committed;
      return this.fail(ctx, req, hold, undefined, err, started);
    }
    try {
      const pending = stillCommitting(hold);
      if (pending) await pending;
    } catch (err) {
      got.value.watch.stop();
      await got.value.it.return?.().catch(() => undefined);
      throw err;
    }
    const { offer, attempts, startedAt } = got;
    const { it, watch } = got.value;
    const s = new OpenedStream(ctx, req, offer, hold, attempts, started, startedAt, Date.now() - started, it, watch);
    // Bound prototype methods, not closures made here: V8 keeps a closure's optimised code only while one of them
    // lives, and the stream path's was thrown away between streams (docs/PERFORMANCE.md, session 38).
    const events = new EngineEvents(got.value.first, s.step.bind(s), this.streamError.bind(this, offer), this.closeStream.bind(this, s),
      s.settled.bind(s), isPolledEvents(it) ? s : undefined);
    return { offer, events, served: s.served.bind(s) };
  }

  /** A stream's failure as its consumer sees it: without the upstream key in its message. */
  private streamError(offer: Offer, err: unknown): unknown {
    return err instanceof UpstreamError ? withoutKey(err, this.target(offer).apiKey) : err;
  }

  /** An opened stream's end (EngineEvents' `close`): the hold settled by its usage, or released; recorded either way. */
  private async closeStream(s: OpenedStream, { ended, failed, failure, usage, chars }: StreamEnd): Promise<void> {
    const { ctx, req, offer } = s;
    s.watch.stop();
    const latencyMs = Date.now() - s.started;
    if (ended) {
      const observed = this.observe(offer, true, 'success', Date.now() - s.startedAt, null);
      if (observed) await observed;
      const u = usage ?? { promptTokens: estimatePromptTokens(req), completionTokens: Math.ceil(chars / 4), cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
      const cost = costOf(offer, u, this.d.config.priceMarkup);
      const charged = await this.d.store.credits.settle(s.hold, cost.totalNano);
      s.result = { offer, attempts: s.attempts, latencyMs, ttftMs: s.ttftMs, usage: u, cost: { ...cost, totalNano: charged } };
      this.record(ctx, offer, req, 'success', 200, u, charged, latencyMs, s.ttftMs, null);
    } else {
      // Broken mid-way or the client left: the request failed, and a failed request costs nothing.
      await this.d.store.credits.release(s.hold);
      await s.it.return?.().catch(() => undefined);
      const cancelled = ctx.signal.aborted || !failed;
      const e = failure instanceof UpstreamError ? failure : new UpstreamError('stream_broken', String((failure as Error)?.message ?? 'stream ended early'));
      this.d.metrics?.upstreamRequest(offer.gateway, cancelled ? 'cancelled' : e.kind, Date.now() - s.startedAt);
      if (!cancelled) await this.observe(offer, false, outcomeOf(e), latencyMs, e.message);
      this.record(ctx, offer, req, cancelled ? 'cancelled' : outcomeOf(e), cancelled ? 499 : clientError(e).status, usage, 0, latencyMs, s.ttftMs,
        cancelled ? 'client_disconnected' : e.kind);
    }
  }
}

/**
 * One opened stream, as its events (EngineEvents) and its end (ChatEngine.closeStream) need it: the upstream's events
 * through their idle watch, and what the end settles and records.
 */
class OpenedStream implements PolledEvents {
  /** Known once the events ended with the upstream's terminator and the hold was settled. */
  result: Served | undefined;

  constructor(readonly ctx: CallContext, readonly req: ChatRequest, readonly offer: Offer, readonly hold: Hold, readonly attempts: number,
    readonly started: number, readonly startedAt: number, readonly ttftMs: number,
    readonly it: AsyncIterator<StreamEvent>, readonly watch: IdleWatch) {}

  step(): Promise<IteratorResult<StreamEvent>> {
    return this.watch.start(this.it);
  }

  settled(): unknown {
    return this.watch.settled();
  }

  served(): Served | undefined {
    return this.result;
  }

  poll(): StreamEvent | undefined {
    return (this.it as unknown as PolledEvents).poll();
  }

  wait(cb: () => void): boolean {
    return this.watch.wait(this.it as unknown as PolledEvents, cb);
  }
}

/** How an opened stream's events ended, for the engine's settle-or-release step. */
export interface StreamEnd {
  /** The upstream's terminator (the `end` event) was handed on. */
  ended: boolean;
  /** The events ended in `failure` (the consumer sees it); otherwise they ended or the consumer stopped. */
  failed: boolean;
  failure: unknown;
  /** The last `usage` event, if any. */
  usage: Usage | null;
  /** Characters of text, thinking and tool-call arguments handed on (the completion estimate without usage). */
  chars: number;
}

const done = () => STREAM_DONE;
const noop = (): void => undefined;

/** What a consumer's `onEvent` returns to stop taking events (EngineEvents.consume): a `break`. */
export const STOP = Symbol('stop consuming');

/** One `consume()` in progress: the consumer, how it ends, and its callbacks once made (EngineEvents.consume). */
interface Consumption {
  onEvent: (ev: StreamEvent) => unknown;
  receiver: unknown;
  resolve: () => void;
  reject: (err: unknown) => void;
  pump: (() => void) | undefined;
  afterNext: ((step: IteratorResult<StreamEvent>) => void) | undefined;
}

/**
 * The events of an opened stream as the engine hands them on: `first`, then each `step()` (the upstream's next
 * event through its idle watch), counted on the way. `close` runs exactly once, when they end for any reason:
 * - the upstream ended: after its terminator the last `next()` resolves done once `close` finished (the settle
 *   is committed before the consumer sees the end); ended without its terminator, `next()` rejects with a
 *   `stream_broken` UpstreamError after `close`;
 * - a step failed: `next()` rejects with `mapError(err)` after `close`;
 * - the consumer stopped (`return()`, e.g. a `break` out of `for await`): `return()` resolves after `close`.
 * A `close` that fails replaces the outcome with its own error. After the end `next()` and `return()` resolve
 * done. Calls are taken one at a time, as an async generator takes them: a `next()` or `return()` made while a
 * `next()` is pending waits for it.
 * This is what an async generator with a `finally` did (until session 10); a generator's `yield` costs three
 * microtask steps per event, this one step.
 */
export class EngineEvents implements AsyncIterableIterator<StreamEvent> {
  private usage: Usage | null = null;
  private chars = 0;
  private ended = false;
  private first: IteratorResult<StreamEvent> | undefined;
  /** Set once `close` was started: the outcome of the end. */
  private closed: Promise<IteratorResult<StreamEvent>> | undefined;
  /** The `next()` in progress, if any. */
  private pending: Promise<IteratorResult<StreamEvent>> | undefined;

  /**
   * `settled` (optional) is told when a step settles, before its outcome is taken; an error it returns replaces
   * that outcome (the idle watch's timeout: IdleWatch.start and settled, one promise step per event fewer than a
   * wrapped step).
   */
  constructor(first: IteratorResult<StreamEvent>, private readonly step: () => Promise<IteratorResult<StreamEvent>>,
    private readonly mapError: (err: unknown) => unknown, private readonly close: (end: StreamEnd) => Promise<void>,
    private readonly settled?: () => unknown, private readonly polled?: PolledEvents) {
    this.first = first;
  }

  /**
   * Hands every event to `onEvent`, as `for await (const ev of this)` with the loop's body `onEvent` would: the same
   * events, the same end (resolved once the close finished; rejected with the failure), and `onEvent` may return a
   * promise to wait for (a full socket), which may resolve to `STOP`, or `STOP` itself: the consumer is done, as a
   * `break` (return() and its close); an error it throws is a `break` too, then rejects the whole.
   * With `polled` (the upstream's events can be taken without a promise, PolledEvents) an event that is here is
   * handed on at once, and a wait is a callback from the body's data callback: no promise and no microtask per event
   * (the end and failures still take `next()`; without `polled`, every event after the first). `for await` cost two
   * promises and two microtask steps per event, and the consumer's resumption (docs/PERFORMANCE.md, session 27).
   * `onEvent` is called with `receiver` as `this`: a consumer passes a prototype method and its object rather than a
   * closure made per stream, whose optimised code V8 would throw away between streams (session 38).
   */
  consume<T>(onEvent: (this: T, ev: StreamEvent) => unknown, receiver?: T): Promise<void> {
    const c: Consumption = { onEvent: onEvent as (ev: StreamEvent) => unknown, receiver, resolve: noop, reject: noop, pump: undefined, afterNext: undefined };
    // The executor only takes the settlers (the pump is called from here: a closure that called it would carry its
    // optimised code, see below).
    const consumed = new Promise<void>((resolve, reject) => {
      c.resolve = resolve;
      c.reject = reject;
    });
    this.pump(c);
    return consumed;
  }

  /*
   * The consumption's steps are prototype methods called with its state (`c`), and what is handed out as a callback
   * is bound to them (`c.pump`, `c.afterNext`): not closures made in `consume`. V8 keeps the optimised code of closures
   * only while one of them lives, so a full collection while no stream is open threw the stream path's away, and it
   * was compiled again under the next streams (docs/PERFORMANCE.md, session 38; src/providers/body-events.ts).
   */

  private stopConsuming(c: Consumption): void {
    void this.return().then(() => c.resolve(), c.reject);
  }

  private broke(c: Consumption, err: unknown): void {
    void this.return().then(() => c.reject(err), () => c.reject(err));
  }

  /** Hands `ev` on; true when the next one can be taken at once. */
  private give(c: Consumption, ev: StreamEvent): boolean {
    const r = c.onEvent.call(c.receiver, ev);
    if (r === STOP) this.stopConsuming(c);
    else if (r instanceof Promise) r.then((v) => (v === STOP ? this.stopConsuming(c) : this.pump(c)), (err) => this.broke(c, err));
    else return true;
    return false;
  }

  private viaNext(c: Consumption): void {
    this.next().then(c.afterNext ??= this.afterNext.bind(this, c), c.reject);
  }

  private afterNext(c: Consumption, step: IteratorResult<StreamEvent>): void {
    try {
      if (step.done) c.resolve();
      else if (this.give(c, step.value)) this.pump(c);
    } catch (err) {
      this.broke(c, err);
    }
  }

  private pump(c: Consumption): void {
    const polled = this.polled;
    try {
      for (;;) {
        let ev: StreamEvent | undefined;
        const first = this.first;
        if (first && !first.done && !this.closed && !this.pending) {
          this.first = undefined;
          ev = first.value;
        } else if (!polled || first || this.closed || this.pending) return this.viaNext(c);
        else {
          ev = polled.poll();
          if (ev === undefined) {
            if (polled.wait(c.pump ??= this.pump.bind(this, c))) return;
            return this.viaNext(c); // the end or a failure: next() tells it
          }
        }
        const late = this.settled?.();
        if (late !== undefined) {
          this.finish(true, this.mapError(late)).then(() => c.resolve(), c.reject);
          return;
        }
        this.count(ev);
        if (!this.give(c, ev)) return;
      }
    } catch (err) {
      this.broke(c, err);
    }
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<StreamEvent>> {
    if (this.closed) return this.closed.then(done, done);
    if (this.pending) return this.pending.then(() => this.next(), () => this.next());
    const first = this.first;
    if (first) {
      this.first = undefined;
      return Promise.resolve(this.take(first));
    }
    let step: Promise<IteratorResult<StreamEvent>>;
    try {
      step = this.step();
    } catch (err) {
      return this.fail(err);
    }
    return (this.pending = step.then(this.take, this.fail));
  }

  return(): Promise<IteratorResult<StreamEvent>> {
    if (this.closed) return this.closed.then(done, done);
    if (this.pending) return this.pending.then(() => this.return(), () => this.return());
    return this.finish(false, undefined);
  }

  /** `next()`'s continuations: bound prototype methods, not arrow fields (see `consume`'s steps). */
  private readonly take: (step: IteratorResult<StreamEvent>) => IteratorResult<StreamEvent> | Promise<IteratorResult<StreamEvent>> = this.taken.bind(this);
  private readonly fail: (err: unknown) => Promise<IteratorResult<StreamEvent>> = this.failed.bind(this);

  private taken(step: IteratorResult<StreamEvent>): IteratorResult<StreamEvent> | Promise<IteratorResult<StreamEvent>> {
    this.pending = undefined;
    const late = this.settled?.();
    if (late !== undefined) return this.finish(true, this.mapError(late));
    if (step.done) {
      return this.ended ? this.finish(false, undefined)
        : this.finish(true, new UpstreamError('stream_broken', 'upstream stream ended without its terminator'));
    }
    this.count(step.value);
    return step;
  }

  /** What the close is told: the last usage, the characters handed on, whether the terminator came. */
  private count(ev: StreamEvent): void {
    if (ev.type === 'usage') this.usage = ev.usage;
    else if (ev.type === 'text' || ev.type === 'thinking') this.chars += ev.text.length;
    else if (ev.type === 'tool_call_delta') this.chars += ev.arguments.length;
    else if (ev.type === 'end') this.ended = true;
  }

  private failed(err: unknown): Promise<IteratorResult<StreamEvent>> {
    this.pending = undefined;
    return this.finish(true, this.mapError(this.settled?.() ?? err));
  }

  private finish(failed: boolean, failure: unknown): Promise<IteratorResult<StreamEvent>> {
    let closing: Promise<void>;
    try {
      closing = this.close({ ended: this.ended, failed, failure, usage: this.usage, chars: this.chars });
    } catch (err) {
      closing = Promise.reject(err);
    }
    return (this.closed = closing.then(() => {
      if (failed) throw failure;
      return STREAM_DONE;
    }));
  }
}

/** The error with the gateway's provider key cut out of its message (an upstream may quote it back). */
function withoutKey(e: UpstreamError, apiKey: string): UpstreamError {
  if (!apiKey || apiKey.length < 6 || !e.message.includes(apiKey)) return e;
  return new UpstreamError(e.kind, redactSecrets(e.message, [apiKey]), e.status, e.retryAfterMs);
}

/**
 * The idle limit of one upstream stream: `next(it)` is the iterator's next event, or an UpstreamError('timeout')
 * when no event came for `ms` since the last one. An upstream that stalls, or dribbles bytes that never make an
 * event (slow loris), is cut off instead of holding the client and its credits until the total timeout:
 * `onTimeout` aborts the upstream request, which ends the iterator's pending read with an error, reported as the
 * timeout. Time spent writing to a slow client does not count. One timer per stream, re-armed only when it fires
 * early (a timer per event cost more than forwarding the event), and nothing raced per event (a `Promise.race`
 * against a timeout promise cost more than the async steps of the event itself).
 */
class IdleWatch {
  /** When the current wait for an event began; null while no `next` is waiting (the client is being written to). */
  private waitingSince: number | null = null;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private timedOut = false;

  /** `onStop`: runs once when the watch stops (the attempt is over: its links to other signals go). */
  constructor(private readonly ms: number, private readonly onTimeout: () => void, private readonly onStop?: () => void) {}

  /** Armed while a wait is on; when it fires early it re-arms for the rest, or stays off until the next wait. */
  private arm(delay: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.waitingSince === null || this.stopped) return;
      const waited = performance.now() - this.waitingSince;
      if (waited < this.ms) return this.arm(this.ms - waited);
      this.timedOut = true;
      this.onTimeout();
    }, delay);
  }

  /** The next step of `it`, settled on its own: `start` with `settled` applied (the stream's first event). */
  next<T>(it: AsyncIterator<T>): Promise<IteratorResult<T>> {
    return this.start(it).then((step) => {
      const late = this.settled(); // an iterator that ended quietly on the abort
      if (late) throw late;
      return step;
    }, (err) => {
      throw this.settled() ?? err;
    });
  }

  /**
   * The next step of `it` itself, the wait started: whoever takes its outcome calls `settled()` first (EngineEvents
   * does), which ends the wait and says whether the timeout fired meanwhile. One promise fewer per event than
   * `next`.
   */
  start<T>(it: AsyncIterator<T>): Promise<IteratorResult<T>> {
    if (!this.begin()) return Promise.reject(this.timeout());
    try {
      return it.next();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * `start` for a polled stream (PolledEvents.wait): the wait begins, and `cb` is called when it ends; whoever it
   * calls takes `settled()` first (EngineEvents.consume). False (and no wait) when the timeout fired or the end is
   * here already: then `next()` tells it.
   */
  wait(it: PolledEvents, cb: () => void): boolean {
    return this.begin() && it.wait(cb);
  }

  /** A wait begins (the timer armed if none is); false when the timeout fired already. */
  private begin(): boolean {
    if (this.timedOut) return false;
    this.waitingSince = performance.now();
    if (!this.timer && !this.stopped) this.arm(this.ms);
    return true;
  }

  /** The wait of `start` is over: the timeout's error if it fired (the step's own outcome is then not used). */
  settled(): UpstreamError | undefined {
    this.waitingSince = null;
    return this.timedOut ? this.timeout() : undefined;
  }

  private timeout(): UpstreamError {
    return new UpstreamError('timeout', `upstream sent no stream event for ${this.ms} ms`);
  }

  stop(): void {
    if (!this.stopped) this.onStop?.();
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}
