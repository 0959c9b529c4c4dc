/**
 * createApp(deps): where every request enters and every error leaves.
 *
 * Every request first passes the prelude (security headers, request id, counting for the graceful stop, the
 * access log and metrics, CORS, path checks, drain). A JSON request for a spec operation then takes the lean
 * path: its body is read here and it goes straight to the dispatcher (src/dispatch.ts: route, auth before
 * validation, validation, handler, reply) on plain node:http objects. Everything else — the /docs pages, /metrics
 * and the HTML /status page, uploads (multipart, URL-encoded forms), compressed or non-UTF-8 bodies — goes through
 * Express and its body parsers, then to the same dispatcher. A bare Express proxy reaches only about 60 % of a
 * node:http one's throughput (docs/PERFORMANCE.md), so the requests that carry the traffic do not pass through it.
 * Errors of every kind leave through one function (sendError) so their bodies match the spec.
 */
import { Buffer } from 'node:buffer';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { hrtime } from 'node:process';
import express, { type NextFunction, type Request, type Response } from 'express';
import proxyAddr from 'proxy-addr';
import { OpenAPIBackend, type Document, type Operation } from 'openapi-backend';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';
import { KeyService, presentedKey, type Principal } from './auth.js';
import { ApiError, ValidationFailure, errorBody } from './errors.js';
import { loadSpec, type SpecDocument } from './spec.js';
import type { Services } from './services.js';
import { handlers } from '../handlers/index.js';
import { installFastRouter } from './router.js';
import { transcriptionBodies, TRANSCRIBE_PATH, TRANSCRIBE_BASE64_PATH } from './media/upload.js';
import { opsRoutes } from './ops-routes.js';
import { docsRouter } from './docs.js';
import { corsPolicy, SECURITY_HEADER_LIST } from './security.js';
import { queueHeaders, startHead } from './head.js';
import { uuid4 } from './ids.js';
import { decodeUtf8 } from './utf8.js';
import { PLAIN_MIN, registerLargeBody } from './json-body.js';
import {
  Dispatcher, errorStyleFor, localsOf, pathOf, sendError, sendJson,
  type GatewayRequest, type GatewayResponse, type Locals, type Reply,
} from './dispatch.js';

export { sendError } from './dispatch.js';
export type { Reply } from './dispatch.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export interface Deps {
  config: Config;
  store: Store;
  keys: KeyService;
  logger: Logger;
  services: Services;
}

/** What a handler receives: validated, coerced input plus the caller. */
export interface HandlerCtx {
  req: GatewayRequest;
  res: GatewayResponse;
  deps: Deps;
  operation: Operation;
  requestId: string;
  principal: Principal | null;
  params: Record<string, any>;
  query: Record<string, any>;
  body: any;
  log: Logger;
  /** The client's address (X-Forwarded-For believed only as far as TRUST_PROXY says). */
  clientIp(): string;
}

export type Handler = (ctx: HandlerCtx) => Promise<Reply | void> | Reply | void;

/** The gateway as a request listener (what `http.createServer` and supertest take), with Express's `listen`. */
export interface GatewayApp {
  (req: IncomingMessage, res: ServerResponse): void;
  listen(port: number, host?: string, callback?: () => void): Server;
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Express's `trust proxy` setting as proxy-addr's trust function (true, a hop count, or addresses/subnets). */
function compileTrust(val: boolean | number | string): (addr: string, i: number) => boolean {
  if (val === true) return () => true;
  if (typeof val === 'number') return (_a, i) => i < val;
  if (typeof val === 'string') return proxyAddr.compile(val.split(',').map((v) => v.trim()));
  return proxyAddr.compile([]);
}

/** A JSON body the lean path reads itself: JSON media type, UTF-8 (or no charset), no content coding. */
function leanBody(req: IncomingMessage): boolean {
  const enc = req.headers['content-encoding'];
  if (enc !== undefined && enc.toLowerCase() !== 'identity') return false;
  const ct = req.headers['content-type'];
  if (ct === undefined) return !hasBody(req);
  const semi = ct.indexOf(';');
  const type = (semi < 0 ? ct : ct.slice(0, semi)).trim().toLowerCase();
  if (type !== 'application/json' && !(type.startsWith('application/') && type.endsWith('+json'))) return false;
  if (semi < 0) return true;
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(ct)?.[1]?.toLowerCase();
  return charset === undefined || charset === 'utf-8';
}

/** As body-parser (type-is) decides it: a Transfer-Encoding, or a Content-Length (even 0). */
const hasBody = (req: IncomingMessage) => req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && !Number.isNaN(Number(req.headers['content-length'])));

/** Reads off the rest of a request we will not use, then calls `done` (as body-parser does before answering). */
function dump(req: IncomingMessage, done: () => void): void {
  if (req.readableEnded || req.destroyed) return done();
  req.on('error', done);
  req.on('end', done);
  req.on('close', done);
  req.resume();
}

/**
 * The lean path's JSON body, with body-parser's rules: no body is `undefined`, an empty one `{}`, the top level
 * must be an object or an array, a declared or actual size over `limit` is refused (after the rest is read off).
 * With it, for a body holding a string of PLAIN_MIN (64 K) characters or more, the function that ends its
 * registration as a large body in flight (its plain strings are written straight into upstream bodies meanwhile:
 * src/json-body.ts), called when the request is over.
 */
function readJsonBody(req: IncomingMessage, limit: number): Promise<[unknown, (() => void) | undefined]> {
  return new Promise((resolve, reject) => {
    if (!hasBody(req)) return resolve([undefined, undefined]);
    const tooLarge = () => Object.assign(new Error('request entity too large'), { type: 'entity.too.large', status: 413 });
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return fail(tooLarge());
      chunks.push(chunk);
    };
    function fail(err: unknown) {
      if (settled) return;
      settled = true;
      req.removeListener('data', onData);
      dump(req, () => reject(err));
    }
    if (Number(req.headers['content-length']) > limit) return fail(tooLarge());
    req.on('data', onData);
    req.once('error', (err) => fail(Object.assign(err, { type: 'request.aborted', status: 400 })));
    req.once('end', () => {
      if (settled) return;
      settled = true;
      const buf = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
      try {
        const value = parseStrictJson(decodeUtf8(buf));
        const large: string[] = [];
        if (tooDeep(value, 1, large)) throw jsonTooDeep();
        resolve([value, registerLargeBody(buf, large)]);
      } catch (err) {
        reject(err);
      }
    });
  });
}

/**
 * body-parser's strict JSON: `{}` for an empty body; a top level other than an object or array is malformed, with
 * the message JSON.parse gives for an unexpected token there.
 */
function parseStrictJson(raw: string): unknown {
  // a UTF-8 byte-order mark is not part of the JSON (body-parser's decoder drops it too)
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (text.length === 0) return {};
  const first = /^[\x20\x09\x0a\x0d]*([^\x20\x09\x0a\x0d])/.exec(text)?.[1];
  try {
    if (first !== '{' && first !== '[') {
      const at = first === undefined ? -1 : text.indexOf(first);
      try {
        JSON.parse(at < 0 ? '' : text.slice(0, at) + '#'.repeat(text.length - at));
      } catch (e) {
        throw new SyntaxError((e as Error).message.replace(/#+/g, (p) => text.slice(at, at + p.length)));
      }
    }
    return JSON.parse(text);
  } catch (err) {
    throw Object.assign(err as Error, { type: 'entity.parse.failed', status: 400 });
  }
}

/** A body that could not be read or parsed, as the spec answers it (both paths). */
function bodyError(err: any, config: Config): ApiError {
  if (err?.code === 'json_too_deep') return new ValidationFailure([{ loc: ['body'], msg: String(err.message), type: 'json_invalid' }]);
  if (err?.type === 'entity.parse.failed') return new ValidationFailure([{ loc: ['body'], msg: `Malformed JSON: ${err.message}`, type: 'json_invalid' }]);
  if (err?.type === 'entity.too.large' || err?.status === 413) {
    return new ApiError(413, 'invalid_request_error', `Request body is larger than the limit of ${config.jsonBodyLimit} bytes.`, 'payload_too_large');
  }
  if (err?.type === 'encoding.unsupported' || err?.type === 'charset.unsupported') return new ApiError(415, 'invalid_request_error', String(err.message), 'unsupported_media_type');
  if (typeof err?.status === 'number' && err.status >= 400 && err.status < 500) return new ApiError(err.status, 'invalid_request_error', String(err.message), 'bad_request');
  return err;
}

export async function createApp(deps: Deps, spec: SpecDocument = loadSpec().doc): Promise<GatewayApp> {
  const { config, logger } = deps;
  const { inflight, metrics } = deps.services;

  // openapi-backend loads the definition and compiles the validators (request and, in tests, response); the
  // dispatcher does the routing and the rest.
  const api = new OpenAPIBackend({
    definition: safeIntegers(structuredClone(spec)) as unknown as Document,
    coerceTypes: true,
    // Validators compile lazily per operation and status (start-up stays fast); this also skips
    // openapi-backend's own document check, which knows only OpenAPI 3.0 — `npm run lint:spec` (redocly)
    // checks the 3.1 document instead.
    quick: true,
    // `/v1/status/` is a path of its own in the interface; the prelude rewrites `/v1/status` to it.
    ignoreTrailingSlashes: false,
    // Parameters are coerced from strings. The schema self-check is off: dereferenced sub-schemas are shared
    // objects that trip it, and redocly lints the document.
    customizeAjv: (_orig, ajvOpts) => {
      const ajv = new Ajv2020({ ...(ajvOpts as object), strict: false, allErrors: true, validateSchema: false });
      addFormats(ajv);
      return ajv as any;
    },
  });
  await api.init();
  const routes = installFastRouter(api);

  // Also called before the dispatcher by the upload parser (src/media/upload.ts), which reads no upload without
  // a valid key; the result is cached for the request.
  /** Whether the request carries a valid key (its principal kept in locals): at once when the key is cached. */
  const authenticate = (req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean> => {
    const locals = localsOf(res);
    if (locals.authChecked) return !!locals.principal;
    locals.authChecked = true;
    const found = deps.keys.authenticate(presentedKey(req.headers));
    if (!(found instanceof Promise)) return !!(locals.principal = found);
    return found.then((p) => !!(locals.principal = p));
  };
  const trust = compileTrust(config.reliability.trustProxy);

  const dispatcher = new Dispatcher({
    api, routes, spec: spec as { security?: unknown[] }, logger, authenticate, schemes: ['bearerAuth', 'apiKeyHeader'],
    run: async (op, req, res, input) => {
      const locals = res.locals;
      const handler = handlers[op.operationId!] as Handler;
      const ctx: HandlerCtx = {
        req, res, deps, operation: op, requestId: locals.requestId, principal: locals.principal ?? null,
        // path params arrive URL-decoded from the router, so `%2F` ids carry their slash
        params: input.params, query: input.query, body: input.body,
        log: logger,
        clientIp: () => proxyAddr(req, trust),
      };
      try {
        // Per-key rate limits (src/limits): a 429 here never reaches the handler; the concurrency slot is
        // given back when the response is over (a stream: after its last byte).
        const admission = await deps.services.limits.admit(ctx.principal);
        if (admission) {
          queueHeaders(res, admission.headers);
          res.on('close', admission.release); // `on`, not `once`: a response closes once, and release is idempotent
        }
        const reply = await handler(ctx);
        if (!reply || res.headersSent) return;
        const status = reply.status ?? 200;
        if (config.validateResponses) checkResponse(api, op, status, reply.body, logger);
        sendJson(res, status, reply.body, reply.headers, req, reply.text);
      } catch (err) {
        if (config.validateResponses && err instanceof ApiError && !(err instanceof ValidationFailure)) {
          checkResponse(api, op, err.status, errorBody(err, locals.requestId, errorStyleFor(pathOf(req.url))), logger);
        }
        sendError(req, res, err, logger);
      }
    },
  });

  const cors = corsPolicy(config.reliability);
  const finished = (req: IncomingMessage, res: GatewayResponse, start: bigint) => () => {
    const ms = Number(hrtime.bigint() - start) / 1e6;
    const path = pathOf(req.url);
    if (logger.isLevelEnabled('info')) logger.info({ requestId: res.locals.requestId, method: req.method, path, status: res.statusCode, ms }, 'request');
    const operation = res.locals.operationId ?? api.matchOperation({ method: req.method!, path, headers: {} })?.operationId;
    metrics.httpRequest(operation ?? 'unmatched', res.statusCode, ms);
  };

  /** Headers, request id, counting, access log, CORS, path checks and drain; false when it answered itself. */
  const prelude = (req: IncomingMessage, res: GatewayResponse): boolean => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID_RE.test(incoming) ? incoming : uuid4();
    // The security headers and the request id, queued for the head (src/head.ts: written with it in one call).
    startHead(res, SECURITY_HEADER_LIST, 'X-Request-Id', requestId);
    const path = pathOf(req.url);
    // Counted until the response is over; the handler is counted apart (below) until its settlement is done.
    // `on`, not `once`: a response closes and finishes once, and `once` wraps each listener in a bound function.
    const probe = isProbe(req.method, path);
    res.on('close', inflight.enter(probe));
    res.locals = { requestId, probe } as Locals;
    res.on('finish', finished(req, res, hrtime.bigint()));
    if (cors(req, res)) return false;
    // A path that is not valid percent-encoded UTF-8 cannot name a resource. Without a `%` it decodes to itself
    // (decodeURIComponent throws only on a bad escape), so the usual path skips the call: a C++ builtin, ~2,300
    // instructions a request (docs/PERFORMANCE.md, session 53).
    if (path.indexOf('%') >= 0) {
      try {
        decodeURIComponent(path);
      } catch {
        sendError(req, res, new ApiError(400, 'invalid_request_error', 'The URL path is not valid percent-encoded UTF-8.', 'malformed_path'), logger);
        return false;
      }
    }
    // A stopping instance finishes what it has and refuses new work, so a load balancer retries elsewhere.
    if (inflight.draining) {
      res.setHeader('Connection', 'close');
      sendError(req, res, new ApiError(503, 'service_unavailable', 'This gateway instance is shutting down; retry the request.', 'shutting_down', null, { 'Retry-After': '1' }), logger);
      return false;
    }
    // `/v1/status` and `/v1/status/` are one operation.
    if (path === '/v1/status') req.url = '/v1/status/' + req.url!.slice('/v1/status'.length);
    return true;
  };

  /** The lean path: JSON (or no) body read here, then the dispatcher. */
  const lean = async (req: GatewayRequest, res: GatewayResponse): Promise<void> => {
    const leave = inflight.enter(res.locals.probe);
    let release: (() => void) | undefined;
    try {
      let body: unknown;
      try {
        [body, release] = await readJsonBody(req, config.jsonBodyLimit);
      } catch (err) {
        return sendError(req, res, bodyError(err, config), logger);
      }
      await dispatcher.dispatch(req, res, body);
    } catch (err) {
      sendError(req, res, err, logger);
    } finally {
      release?.();
      leave();
    }
  };

  // Express serves what is not a JSON operation: the API reference, /metrics, the HTML status page, uploads and
  // bodies that need its parsers (forms, compressed or non-UTF-8 JSON). It ends in the same dispatcher.
  const ex = express();
  ex.disable('x-powered-by');
  ex.disable('etag');
  ex.set('trust proxy', config.reliability.trustProxy);
  ex.set('query parser', 'extended');
  // The interactive API reference (HTML and static assets, not spec operations; its CSP is in src/docs.ts).
  ex.use(docsRouter());
  // Transcription bodies (multipart streamed with busboy, base64 forms up to the upload limit) before the
  // generic parsers; their fields are then validated by the spec like any body.
  ex.use(transcriptionBodies({ limit: config.uploadLimit, authenticate, fail: (req, res, err) => sendError(req, res, err, logger) }));
  ex.use(express.json({ limit: config.jsonBodyLimit, type: ['application/json', 'application/*+json'] }));
  ex.use(express.urlencoded({ limit: config.jsonBodyLimit, extended: false }));
  ex.use((req: Request, _res: Response, next: NextFunction) => next(tooDeep(req.body) ? jsonTooDeep() : undefined));
  // Plain routes outside the JSON contract: /metrics and the HTML /status page (src/ops-routes.ts).
  ex.use(opsRoutes(deps));
  ex.use(async (req: Request, res: Response) => {
    const leave = inflight.enter((res.locals as Locals).probe);
    try {
      await dispatcher.dispatch(req, res as unknown as GatewayResponse, req.body);
    } catch (err) {
      sendError(req, res, err, logger);
    } finally {
      leave();
    }
  });
  ex.use((err: any, req: Request, res: Response, _next: NextFunction) => sendError(req, res, bodyError(err, config), logger));

  const app = ((req: IncomingMessage, res: ServerResponse) => {
    const r = res as GatewayResponse;
    if (!prelude(req, r)) return;
    if (needsExpress(req) || !leanBody(req)) {
      ex(req as Request, res as Response);
      return;
    }
    void lean(req as GatewayRequest, r);
  }) as GatewayApp;
  app.listen = (port: number, host?: string, callback?: () => void) => http.createServer(app).listen(port, host, callback);
  return app;
}

/**
 * A monitoring probe: what load balancers, orchestrators and Prometheus poll every few seconds. Served and counted for
 * a graceful stop like any request, but not traffic to the memory's quiet spell (src/memory.ts): a gateway polled every
 * 10 s would otherwise never give its idle memory back.
 */
function isProbe(method: string | undefined, path: string): boolean {
  return (path === '/health' || path === '/metrics') && (method === 'GET' || method === 'HEAD');
}

/** The plain Express routes and the upload operations. */
function needsExpress(req: IncomingMessage): boolean {
  const path = pathOf(req.url);
  if (req.method === 'GET' || req.method === 'HEAD') return path === '/docs' || path.startsWith('/docs/') || path === '/metrics' || path === '/status';
  return req.method === 'POST' && (path === TRANSCRIBE_PATH || path === TRANSCRIBE_BASE64_PATH);
}

/** JSON nested deeper than this is refused, right after the parse (no API shape comes near it). */
export const MAX_JSON_DEPTH = 128;

/**
 * Parsing a 100,000-deep array works (V8's JSON parser does not recurse), but every later step that walks the value
 * (validation, JSON.stringify to an upstream, structuredClone) overflows the stack. So a parsed body whose arrays and
 * objects nest deeper than MAX_JSON_DEPTH is refused with a 422 before any of them runs. The walk visits each array
 * and object once, stops at the first one too deep, and recurses at most MAX_JSON_DEPTH levels. (Until session 25
 * the raw bytes were scanned one by one before the parse: ~0.9 µs per KB, 88 µs for a 100 KB conversation, where
 * this walk takes a few µs for its few hundred objects.) Given `large`, the same walk collects the strings of
 * PLAIN_MIN characters and more (src/json-body.ts: only a body holding one is registered).
 */
function tooDeep(value: unknown, depth = 1, large?: string[]): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (depth > MAX_JSON_DEPTH) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (typeof v === 'object') {
        if (v !== null && tooDeep(v, depth + 1, large)) return true;
      } else if (large !== undefined && typeof v === 'string' && v.length >= PLAIN_MIN) large.push(v);
    }
  } else {
    for (const k in value as Record<string, unknown>) {
      const v = (value as Record<string, unknown>)[k];
      if (typeof v === 'object') {
        if (v !== null && tooDeep(v, depth + 1, large)) return true;
      } else if (large !== undefined && typeof v === 'string' && v.length >= PLAIN_MIN) large.push(v);
    }
  }
  return false;
}

/** A body `tooDeep` refused, as bodyError answers it (a 422 json_invalid). */
const jsonTooDeep = () => Object.assign(new Error(`JSON nested deeper than ${MAX_JSON_DEPTH} levels.`), { status: 422, code: 'json_too_deep' });

/**
 * JSON Schema's `integer` includes 1e308; the database does not. Every integer without bounds of its own is
 * bounded to a safe integer (|n| <= 2^53 - 1) for validation, so such a value is a 422, not a database error.
 */
function safeIntegers<T>(node: T): T {
  if (Array.isArray(node)) node.forEach(safeIntegers);
  else if (node && typeof node === 'object') {
    const s = node as Record<string, unknown>;
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (types.includes('integer')) {
      if (s.maximum === undefined && s.exclusiveMaximum === undefined) s.maximum = Number.MAX_SAFE_INTEGER;
      if (s.minimum === undefined && s.exclusiveMinimum === undefined) s.minimum = Number.MIN_SAFE_INTEGER;
    }
    for (const [k, v] of Object.entries(s)) if (k !== 'enum' && k !== 'const' && k !== 'default' && k !== 'example') safeIntegers(v);
  }
  return node;
}

/**
 * Response validation (on in tests): a body that breaks the spec, or a status the spec does not declare, is a
 * programming error; it throws so the test that caused it fails loudly.
 */
function checkResponse(api: OpenAPIBackend, op: Operation, status: number, body: unknown, log: Logger) {
  const responses = (op.responses ?? {}) as Record<string, unknown>;
  const declared = responses[String(status)] ?? responses[`${Math.floor(status / 100)}XX`] ?? responses.default;
  if (!declared) throw new ResponseContractError(`${op.operationId}: status ${status} is not declared in the spec`);
  const result = api.validateResponse(body, op, status);
  if (result.errors?.length) {
    log.error({ operationId: op.operationId, status, errors: result.errors }, 'response does not match the spec');
    throw new ResponseContractError(`${op.operationId} ${status} response does not match the spec: ${JSON.stringify(result.errors.slice(0, 5))}`);
  }
}

export class ResponseContractError extends ApiError {
  constructor(message: string) {
    super(500, 'server_error', message, 'response_contract_violation');
  }
}
