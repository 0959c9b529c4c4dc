/**
 * The one HTTP client for upstream calls: undici with pooled keep-alive connections, connect / first-byte /
 * idle timeouts, and one mapping from transport failures and HTTP statuses to UpstreamError.
 */
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import type { Readable } from 'node:stream';
import { UpstreamError } from '../engine/types.js';
import { Cancellation } from '../cancel.js';

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
  body: Dispatcher.ResponseData['body'];
}

/**
 * Sends a request. Resolves once the status line and headers arrived (the first byte); the body streams.
 * Any non-2xx status is read (bounded) and thrown as an UpstreamError, unless `passStatus` is set: then every
 * status is returned and the caller reads the body (facades tell "not found" apart from other refusals by it).
 * `signal` aborts everything.
 */
export async function send(
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
  // One cancellation per call, aborted by the client's signal or by the total timeout, and let go when the body
  // is over (AbortSignal.timeout + AbortSignal.any cost a timer, weak references and finalizers per call; an
  // AbortController outlives the request in the heap: src/cancel.ts).
  const ac = new Cancellation();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort(new DOMException('upstream total timeout', 'TimeoutError'));
  }, Math.min(init.timeouts.totalMs, 2 ** 31 - 1));
  timer.unref();
  const onClientAbort = () => ac.abort(init.signal.reason);
  if (init.signal.aborted) onClientAbort();
  else init.signal.addEventListener('abort', onClientAbort, { once: true });
  const release = () => {
    clearTimeout(timer);
    init.signal.removeEventListener('abort', onClientAbort);
  };
  let res: Dispatcher.ResponseData;
  try {
    const { origin, path } = splitUrl(url);
    res = await agentFor(init.timeouts.connectMs).request({
      origin,
      path,
      method: (init.method ?? 'POST') as Dispatcher.HttpMethod,
      headers: init.headers,
      body: init.body,
      signal: ac.signal,
      headersTimeout: init.timeouts.firstByteMs,
      bodyTimeout: init.timeouts.bodyIdleMs ?? init.timeouts.firstByteMs,
    });
  } catch (err) {
    release();
    throw transportError(err, init.signal, timedOut ? ac.signal : undefined);
  }
  res.body.once('close', release);
  if ((res.statusCode >= 200 && res.statusCode < 300) || init.passStatus) return { status: res.statusCode, headers: res.headers, body: res.body };
  const text = await readCapped(res.body, 64 * 1024).catch(() => '');
  // An upstream may quote the credential it was sent ("Incorrect API key provided: sk-…"): it never goes further.
  throw (init.mapError ?? statusError)(res.statusCode, res.headers, redactSecrets(text, sentSecrets(url, init.headers)));
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
  const parts: Uint8Array[] = [];
  let n = 0;
  try {
    for await (const chunk of body) {
      n += chunk.length;
      if (n > cap) throw new UpstreamError('invalid_response', `upstream body larger than ${cap} bytes`);
      parts.push(chunk);
    }
  } catch (err) {
    // A body cut off while being read (reset, idle or total timeout) is a transport failure like any other,
    // e.g. a slow-loris upstream stopped by the total timeout is a timeout, not a "connection" error.
    throw err instanceof UpstreamError ? err : transportError(err);
  }
  const whole = parts.length === 1 ? parts[0] : Buffer.concat(parts, n);
  return Buffer.from(whole.buffer, whole.byteOffset, whole.byteLength).toString('utf8');
}

export async function readJson<T = any>(body: AsyncIterable<Uint8Array>): Promise<T> {
  const text = await readCapped(body);
  try {
    return JSON.parse(text) as T;
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

export function transportError(err: unknown, clientSignal?: AbortSignal, total?: AbortSignal): unknown {
  if (clientSignal?.aborted) return err; // the client went away: not an upstream fault
  if (total?.aborted) return new UpstreamError('timeout', 'upstream did not finish within the total timeout');
  const e = err as { code?: string; name?: string; message?: string };
  if (e instanceof undiciErrors.ConnectTimeoutError || e?.code === 'UND_ERR_CONNECT_TIMEOUT') return new UpstreamError('timeout', 'upstream connect timeout');
  if (e instanceof undiciErrors.HeadersTimeoutError || e?.code === 'UND_ERR_HEADERS_TIMEOUT') return new UpstreamError('timeout', 'upstream first-byte timeout');
  if (e instanceof undiciErrors.BodyTimeoutError || e?.code === 'UND_ERR_BODY_TIMEOUT') return new UpstreamError('timeout', 'upstream stalled mid-body');
  if (e?.name === 'AbortError' || e?.name === 'TimeoutError') return new UpstreamError('timeout', 'upstream timeout');
  if (err instanceof UpstreamError) return err;
  return new UpstreamError('connection', `upstream connection failed: ${e?.code ?? e?.message ?? 'unknown'}`);
}

type UpstreamBody = NodeJS.ReadableStream & { dump?: (opts?: { limit: number }) => Promise<void>; destroy(err?: Error): unknown; readableEnded?: boolean };
const noop = () => {};

/**
 * The chunks of a streamed upstream body, for a reader that may stop early (an SSE stream is complete at its
 * `[DONE]` or `message_stop`, usually a few bytes before the HTTP body ends). Iterating the body with
 * `for await` would destroy it on such an early stop, and undici then closes the connection instead of
 * returning it to the pool: every stream would cost a new connection. Here an early stop reads off the few
 * bytes left (undici's `dump`, bounded) so the connection is kept. Read with 'data' events and pause/resume.
 */
export function bodyChunks(body: UpstreamBody): AsyncIterable<Buffer> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<Buffer> {
      const queue: Buffer[] = [];
      let ended = false;
      let failure: unknown;
      let wake: (() => void) | undefined;
      const signal = () => { const w = wake; wake = undefined; w?.(); };
      const onData = (chunk: Buffer) => {
        queue.push(chunk);
        if (queue.length >= 16) body.pause();
        signal();
      };
      const onEnd = () => { ended = true; signal(); };
      const onError = (err: unknown) => { failure ??= err; signal(); };
      const onClose = () => {
        if (!ended) failure ??= Object.assign(new Error('upstream body closed before its end'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
        signal();
      };
      const detach = () => {
        body.off('data', onData);
        body.off('end', onEnd);
        body.off('error', onError);
        body.off('close', onClose);
      };
      body.on('error', noop); // an error after the reader is gone must not become an uncaught exception
      body.on('data', onData);
      body.on('end', onEnd);
      body.on('error', onError);
      body.on('close', onClose);
      return {
        async next(): Promise<IteratorResult<Buffer>> {
          for (;;) {
            const chunk = queue.shift();
            if (chunk) {
              if (queue.length < 4 && body.isPaused()) body.resume();
              return { value: chunk, done: false };
            }
            if (failure) { detach(); throw failure; }
            if (ended) { detach(); return { value: undefined, done: true }; }
            await new Promise<void>((resolve) => { wake = resolve; });
          }
        },
        async return(): Promise<IteratorResult<Buffer>> {
          detach();
          if (!ended && !failure) {
            if (typeof body.dump === 'function') body.dump({ limit: 256 * 1024 }).catch(noop);
            else body.destroy();
          }
          return { value: undefined, done: true };
        },
      };
    },
  };
}
