/**
 * The one HTTP client for upstream calls: undici with pooled keep-alive connections, connect / first-byte /
 * idle timeouts, and one mapping from transport failures and HTTP statuses to UpstreamError.
 */
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import { Buffer } from 'node:buffer';
import type { Readable } from 'node:stream';
import { UpstreamError } from '../engine/types.js';
import { decodeUtf8, encodeUtf8 } from '../utf8.js';

export interface Timeouts {
  connectMs: number;
  firstByteMs: number;
  totalMs: number;
  /**
   * The longest quiet spell inside the body (undici's body timeout); `firstByteMs` when not set. A stream's idle
   * limit is the chat engine's (its IdleWatch reports it as such): it sets this a second later, as a backstop.
   */
  bodyIdleMs?: number;
}

const agents = new Map<number, Agent>();

function agentFor(connectMs: number): Agent {
  let a = agents.get(connectMs);
  if (!a) {
    a = new Agent({ connect: { timeout: connectMs }, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 512 });
    agents.set(connectMs, a);
  }
  return a;
}

const joinedUrls = new Map<string, Map<string, string>>();

/**
 * `base` + `path` as one string kept per pair (a provider's base URL and its endpoint's path): every call gets the
 * same string, whose hash V8 keeps, for the lookup in `splitUrl` below. A URL made per call was a new two-piece
 * string that each lookup flattened and hashed again (~1,600 instructions a request, docs/PERFORMANCE.md, session
 * 41). Bounded as that cache is.
 */
export function upstreamUrl(base: string, path: string): string {
  let paths = joinedUrls.get(base);
  if (!paths) {
    if (joinedUrls.size >= 64) joinedUrls.clear();
    joinedUrls.set(base, (paths = new Map()));
  }
  let url = paths.get(path);
  if (url === undefined) {
    if (paths.size >= 256) paths.clear();
    paths.set(path, (url = base + path));
  }
  return url;
}

/**
 * An upstream URL as undici's dispatcher takes it (origin, and path with its query), parsed once per URL text:
 * undici's top-level `request(url)` parses the URL on every call and copies the options, ~10 µs of a request's
 * ~20 µs in undici before it is queued (a micro-benchmark); the same few URLs serve every request. Bounded: a URL
 * that carries an id (media, hub lookups) must not grow the cache without end.
 */
const parsedUrls = new Map<string, { origin: string; path: string }>();

function splitUrl(url: string): { origin: string; path: string } {
  let parts = parsedUrls.get(url);
  if (!parts) {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new undiciErrors.InvalidArgumentError('Invalid URL protocol: the URL must start with `http:` or `https:`.');
    parts = { origin: u.origin, path: u.search ? `${u.pathname}${u.search}` : u.pathname };
    if (parsedUrls.size >= 256) parsedUrls.clear();
    parsedUrls.set(url, parts);
  }
  return parts;
}

export async function closeAgents(): Promise<void> {
  await Promise.all([...agents.values()].map((a) => a.close().catch(() => {})));
  agents.clear();
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: UpstreamBody;
}

/**
 * Sends a request. Resolves once the status line and headers arrived (the first byte); the body streams.
 * Any non-2xx status is read (bounded) and thrown as an UpstreamError, unless `passStatus` is set: then every
 * status is returned and the caller reads the body (facades tell "not found" apart from other refusals by it).
 * `signal` aborts everything. A 2xx answer resolves the call's own promise (no async step in between: each is a
 * microtask on the way to the first byte).
 */
export function send(
  url: string,
  init: {
    method?: string;
    headers: Record<string, string>;
    /** A Readable streams (multipart uploads); the caller then sets `content-length`. */
    body?: string | Buffer | Uint8Array | Readable;
    signal: AbortSignal;
    timeouts: Timeouts;
    /** Maps a non-2xx answer when the provider's error body says more than its status (default statusError). */
    mapError?: (status: number, headers: UpstreamResponse['headers'], text: string) => UpstreamError;
    /** Return non-2xx answers instead of throwing (the caller reads the error body itself). */
    passStatus?: boolean;
  },
): Promise<UpstreamResponse> {
  return new Promise<UpstreamResponse>((resolve, reject) => new UpstreamCall(url, init, resolve, reject));
}

/** A non-2xx answer (without `passStatus`) as the UpstreamError its body and status make. */
async function refused(url: string, init: Parameters<typeof send>[1], res: UpstreamResponse): Promise<never> {
  const text = await readCapped(res.body, 64 * 1024).catch(() => '');
  // An upstream may quote the credential it was sent ("Incorrect API key provided: sk-…"): it never goes further.
  throw (init.mapError ?? statusError)(res.status, res.headers, redactSecrets(text, sentSecrets(url, init.headers)));
}

/**
 * One upstream call as undici's dispatch handler. undici's `request()` wraps each call in an AsyncResource, a Node
 * Readable for the body (its events, its buffer) and an abort-signal listener, and the body was then read through
 * 'data' events into a queue: ~20 µs of CPU per streamed call here (a micro-benchmark: 69–102 → 49–68 µs for a
 * 20-chunk stream from a local server, client side). Here the chunks go from undici's parser straight into the body's queue.
 * The client's signal and the total timeout abort the call through undici's controller; before the request has
 * started (queued for a connection) the promise is rejected at once, and the request aborted when it starts.
 */
class UpstreamCall implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  /** An abort asked for before the request started. */
  private reason: unknown;
  private body: UpstreamBody | undefined;
  private settled = false;
  private timedOut = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly url: string,
    private readonly init: Parameters<typeof send>[1],
    private readonly resolve: (res: UpstreamResponse | Promise<never>) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.timer = setTimeout(this.onTimeout, Math.min(init.timeouts.totalMs, 2 ** 31 - 1));
    this.timer.unref();
    if (init.signal.aborted) {
      this.abort(init.signal.reason);
      return;
    }
    init.signal.addEventListener('abort', this.onClientAbort, { once: true });
    try {
      const { origin, path } = splitUrl(url);
      agentFor(init.timeouts.connectMs).dispatch({
        origin,
        path,
        method: (init.method ?? 'POST') as Dispatcher.HttpMethod,
        headers: init.headers,
        body: typeof init.body === 'string' ? encodeUtf8(init.body) : init.body,
        headersTimeout: init.timeouts.firstByteMs,
        bodyTimeout: init.timeouts.bodyIdleMs ?? init.timeouts.firstByteMs,
      }, this);
    } catch (err) {
      this.onResponseError(undefined, err as Error);
    }
  }

  private readonly onClientAbort = (): void => this.abort(this.init.signal.reason);

  private readonly onTimeout = (): void => {
    this.timedOut = true;
    this.abort(new DOMException('upstream total timeout', 'TimeoutError'));
  };

  private abort(reason: unknown): void {
    if (this.controller) {
      this.controller.abort(reason as Error);
      return;
    }
    this.reason ??= reason;
    this.fail(reason);
  }

  /** The call is over (both steps are no-ops the second time). */
  private release(): void {
    clearTimeout(this.timer);
    this.init.signal.removeEventListener('abort', this.onClientAbort);
  }

  private fail(err: unknown): void {
    this.release();
    const body = this.init.body;
    if (body && typeof body === 'object' && 'destroy' in body && !body.destroyed) body.on('error', noop).destroy();
    if (!this.settled) {
      this.settled = true;
      this.reject(transportError(err, this.init.signal, this.timedOut));
    } else this.body?.fail(err);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.reason !== undefined) controller.abort(this.reason as Error);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200 || this.settled) return; // 1xx: informational, the answer follows
    this.settled = true;
    this.body = new UpstreamBody(controller);
    const res: UpstreamResponse = { status: statusCode, headers, body: this.body };
    this.resolve((statusCode < 300) || this.init.passStatus ? res : refused(this.url, this.init, res));
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.body?.push(chunk);
  }

  onResponseEnd(): void {
    this.release();
    this.body?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    this.fail(err);
  }
}

/** What a body needs of undici's controller (tests drive a body with their own). */
export interface BodyFlow {
  pause(): void;
  resume(): void;
  abort(reason: Error): void;
}

/**
 * The upstream is paused while 64 KiB wait unread (or 256 chunks), and resumed once less than a quarter of each is
 * left. Until session 33 it was paused at 16 chunks whatever their size (resumed below 4): up to 16 × 64 KiB (undici's
 * reads) waited for a slow reader, and a 20-chunk answer that arrived with its head, before the reader was there,
 * paused and resumed the call in 4 streams of 5 (its last chunks put back into the socket and parsed again).
 */
const PAUSE_AT_BYTES = 64 * 1024;
const PAUSE_AT_CHUNKS = 256;
const RESUME_BELOW_BYTES = PAUSE_AT_BYTES / 4;
const RESUME_BELOW_CHUNKS = PAUSE_AT_CHUNKS / 4;

/**
 * An upstream response's body: its chunks in order, read once, by `for await` or `next()`.
 *
 * A reader that stops early (`return()`, e.g. `break` in a `for await`, or an SSE stream complete at its `[DONE]`
 * or `message_stop`, usually a few bytes before the HTTP body ends) lets the body go by reading off what is left,
 * at most 256 KB, so the connection goes back to the pool (aborting would close it: every stream would cost a new
 * connection; test/e2e/upstream-reuse.test.ts). `dump()` does the same on purpose; `destroy()` aborts the call.
 * The upstream is paused while 64 KiB (or 256 chunks) wait unread.
 */
export class UpstreamBody implements AsyncIterableIterator<Buffer> {
  private queue: Buffer[] = [];
  /** The bytes of the chunks in `queue`. */
  private unread = 0;
  private ended = false;
  private failure: unknown;
  private wake: (() => void) | undefined;
  private paused = false;
  /** Bytes still allowed to be read off after the reader let go; -1 while it reads. */
  private discarding = -1;
  private dumped: (() => void) | undefined;

  constructor(private readonly flow: BodyFlow) {}

  /** The body is over: every chunk arrived, or it failed (the reader may still have chunks to read). */
  get over(): boolean {
    return this.ended || this.failure !== undefined;
  }

  push(chunk: Buffer): void {
    if (this.discarding >= 0) {
      this.discarding -= chunk.length;
      if (this.discarding < 0) this.flow.abort(new Error('upstream body larger than its reader let it read off'));
      return;
    }
    this.queue.push(chunk);
    this.unread += chunk.length;
    if (!this.paused && (this.unread >= PAUSE_AT_BYTES || this.queue.length >= PAUSE_AT_CHUNKS)) {
      this.paused = true;
      this.flow.pause();
    }
    this.signal();
  }

  end(): void {
    this.ended = true;
    this.signal();
  }

  fail(err: unknown): void {
    if (this.over) return;
    this.failure = err ?? new Error('upstream body failed');
    this.signal();
  }

  private signal(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
    if (this.over && this.dumped) {
      const d = this.dumped;
      this.dumped = undefined;
      d();
    }
  }

  /** Little enough waits unread for a paused upstream to go on. */
  private mayResume(): boolean {
    return this.unread < RESUME_BELOW_BYTES && this.queue.length < RESUME_BELOW_CHUNKS;
  }

  /** Why the body failed, once it has (chunks that came before are still read first). */
  get error(): unknown {
    return this.failure;
  }

  /**
   * For a reader that takes chunks as they come (the stream reader, src/providers/body-events.ts): the next chunk,
   * or `undefined` when none is here (`over` and `error` then say whether more can come). With `onReady` instead
   * of `next()`, a chunk that arrives reaches the reader inside undici's data callback, without the promise steps
   * of an async iterator. A paused upstream is resumed a microtask later: never from inside undici's callback.
   */
  shift(): Buffer | undefined {
    if (this.discarding >= 0) return undefined;
    const chunk = this.queue.shift();
    if (chunk) this.unread -= chunk.length;
    if (chunk && this.paused && this.mayResume()) this.resumeSoon();
    return chunk;
  }

  /** Resumes a paused upstream a microtask later: never from inside undici's callback (the caller may be in it). */
  private resumeSoon(): void {
    this.paused = false;
    queueMicrotask(() => {
      if (!this.paused) this.flow.resume();
    });
  }

  /**
   * Every chunk that has arrived and not been read, as one (`shift`'s rules otherwise): the pieces of one socket read
   * (an HTTP chunk each: a server's SSE event each) are decoded and parsed in one step instead of one each, which
   * costs per piece whatever its size (docs/PERFORMANCE.md, session 46).
   */
  shiftAll(): Buffer | undefined {
    const n = this.queue.length;
    if (n <= 1) return this.shift();
    if (this.discarding >= 0) return undefined;
    const all = Buffer.concat(this.queue, this.unread);
    this.queue = [];
    this.unread = 0;
    if (this.paused) this.resumeSoon();
    return all;
  }

  /**
   * The whole body, when all of it has arrived and no reader has taken any (a small answer comes in the same read
   * as its head): its chunks at once, without the async steps of `for await`; undefined otherwise (read it as it
   * comes). Once taken, the body is read.
   */
  takeAll(): Buffer[] | undefined {
    if (!this.ended || this.failure !== undefined || this.discarding >= 0) return undefined;
    const all = this.queue;
    this.queue = [];
    this.unread = 0;
    return all;
  }

  /** Calls `fn` once, when the next chunk, the end or a failure arrives (at `next()`'s wake-up, in order). */
  onReady(fn: () => void): void {
    const waiting = this.wake;
    this.wake = waiting ? () => { waiting(); fn(); } : fn;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Buffer>> {
    for (;;) {
      const chunk = this.queue.shift();
      if (chunk) {
        this.unread -= chunk.length;
        if (this.paused && this.mayResume()) {
          this.paused = false;
          this.flow.resume();
        }
        return { value: chunk, done: false };
      }
      if (this.failure !== undefined && this.discarding < 0) throw this.failure;
      if (this.over || this.discarding >= 0) return { value: undefined, done: true };
      await new Promise<void>((resolve) => {
        // Readers take one chunk at a time, but a second `next()` made while one waits must not orphan the first.
        const waiting = this.wake;
        this.wake = waiting ? () => { waiting(); resolve(); } : resolve;
      });
    }
  }

  async return(): Promise<IteratorResult<Buffer>> {
    this.dump({ limit: 256 * 1024 }).catch(noop);
    return { value: undefined, done: true };
  }

  /** Reads off and drops the rest of the body, at most `limit` bytes more (then the call is aborted). */
  dump(opts: { limit?: number } = {}): Promise<void> {
    if (this.discarding < 0) {
      this.discarding = opts.limit ?? 128 * 1024;
      this.discarding -= this.unread;
      this.queue = [];
      this.unread = 0;
      this.signal();
      if (!this.over && this.discarding < 0) this.flow.abort(new Error('upstream body larger than its reader let it read off'));
      if (this.paused) {
        this.paused = false;
        this.flow.resume();
      }
    }
    if (this.over) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const prev = this.dumped;
      this.dumped = prev ? () => { prev(); resolve(); } : resolve;
    });
  }

  /** Aborts the call: the rest of the body is not read, and the connection is closed. */
  destroy(err?: Error): void {
    if (this.over) return;
    const reason = err ?? new Error('upstream body destroyed by its reader');
    this.flow.abort(reason);
    this.fail(reason);
  }
}

const SECRET_HEADERS = ['authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'proxy-authorization'];

/** The credentials a request carries: auth header values (without their scheme) and `key`-like query values. */
export function sentSecrets(url: string, headers: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(headers)) {
    if (!SECRET_HEADERS.includes(k.toLowerCase()) || typeof v !== 'string') continue;
    out.push(v.replace(/^(Bearer|Basic|Token)\s+/i, '').trim());
  }
  try {
    for (const [k, v] of new URL(url).searchParams) if (/key|token|secret|sig/i.test(k)) out.push(v);
  } catch { /* not a URL: nothing in it */ }
  return out.filter((s) => s.length >= 6);
}

/** `text` with every occurrence of every secret replaced by `[redacted]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s && out.includes(s)) out = out.split(s).join('[redacted]');
  return out;
}

/** Reads a whole (small) body as text, at most `cap` bytes. */
export async function readCapped(body: AsyncIterable<Uint8Array>, cap = 32 * 1024 * 1024): Promise<string> {
  const all = body instanceof UpstreamBody ? body.takeAll() : undefined;
  const parts: Uint8Array[] = all ?? [];
  let n = 0;
  try {
    if (all) {
      for (const chunk of all) n += chunk.length;
      if (n > cap) throw new UpstreamError('invalid_response', `upstream body larger than ${cap} bytes`);
    } else {
      for await (const chunk of body) {
        n += chunk.length;
        if (n > cap) throw new UpstreamError('invalid_response', `upstream body larger than ${cap} bytes`);
        parts.push(chunk);
      }
    }
  } catch (err) {
    // A body cut off while being read (reset, idle or total timeout) is a transport failure like any other,
    // e.g. a slow-loris upstream stopped by the total timeout is a timeout, not a "connection" error.
    throw err instanceof UpstreamError ? err : transportError(err);
  }
  const whole = parts.length === 1 ? parts[0] : Buffer.concat(parts, n);
  return decodeUtf8(Buffer.from(whole.buffer, whole.byteOffset, whole.byteLength));
}

export async function readJson<T = any>(body: AsyncIterable<Uint8Array>): Promise<T> {
  return upstreamJson(await readCapped(body)) as T;
}

/** An upstream body's text parsed; not JSON is an `invalid_response`. */
export function upstreamJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError('invalid_response', 'upstream answered with malformed JSON');
  }
}

function retryAfterMs(headers: Record<string, string | string[] | undefined>): number | undefined {
  const raw = headers['retry-after'];
  const v = Array.isArray(raw) ? raw[0] : raw;
  if (!v) return undefined;
  const secs = Number(v);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const date = Date.parse(v);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/** A short, safe summary of an upstream error body (never the body itself: it may echo keys). */
function upstreamMessage(text: string): string {
  try {
    const j = JSON.parse(text);
    const m = j?.error?.message ?? j?.message ?? j?.error;
    if (typeof m === 'string') return m.replace(/(sk|gw_live|key)[-_][A-Za-z0-9_-]{8,}/g, '[redacted]').slice(0, 300);
  } catch { /* not JSON */ }
  return '';
}

export function statusError(status: number, headers: Record<string, string | string[] | undefined>, text: string): UpstreamError {
  const detail = upstreamMessage(text);
  const msg = (what: string) => `${what} (upstream HTTP ${status})${detail ? `: ${detail}` : ''}`;
  if (status === 429) return new UpstreamError('rate_limited', msg('upstream rate limit'), status, retryAfterMs(headers));
  if (status === 401 || status === 403) return new UpstreamError('auth', `upstream refused the gateway's provider credentials (HTTP ${status})`, status);
  if (status === 404) return new UpstreamError('not_found', msg('model not found upstream'), status);
  if (status === 400 || status === 413 || status === 422) return new UpstreamError('bad_request', msg('upstream rejected the request'), status);
  if (status === 408 || status === 504) return new UpstreamError('timeout', msg('upstream timed out'), status);
  return new UpstreamError('server_error', msg('upstream error'), status);
}

export function transportError(err: unknown, clientSignal?: AbortSignal, totalTimedOut = false): unknown {
  if (clientSignal?.aborted) return err; // the client went away: not an upstream fault
  if (totalTimedOut) return new UpstreamError('timeout', 'upstream did not finish within the total timeout');
  const e = err as { code?: string; name?: string; message?: string };
  if (e instanceof undiciErrors.ConnectTimeoutError || e?.code === 'UND_ERR_CONNECT_TIMEOUT') return new UpstreamError('timeout', 'upstream connect timeout');
  if (e instanceof undiciErrors.HeadersTimeoutError || e?.code === 'UND_ERR_HEADERS_TIMEOUT') return new UpstreamError('timeout', 'upstream first-byte timeout');
  if (e instanceof undiciErrors.BodyTimeoutError || e?.code === 'UND_ERR_BODY_TIMEOUT') return new UpstreamError('timeout', 'upstream stalled mid-body');
  if (e?.name === 'AbortError' || e?.name === 'TimeoutError') return new UpstreamError('timeout', 'upstream timeout');
  if (err instanceof UpstreamError) return err;
  return new UpstreamError('connection', `upstream connection failed: ${e?.code ?? e?.message ?? 'unknown'}`);
}

function noop(): void {}
