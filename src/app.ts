/**
 * createApp(deps): Express 5 in front of openapi-backend. openapi-backend matches each request to an
 * operationId, runs the security handlers (auth before validation, so a keyless request is a 401, not a 422),
 * validates it against spec/openapi.yaml, and calls the handler from handlers/index.ts. Errors of every kind
 * leave through one function (src/errors.ts) so their bodies match the spec.
 */
import crypto from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { OpenAPIBackend, type Context, type Document, type Operation } from 'openapi-backend';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Config } from './config.js';
import type { Store } from './store/index.js';
import type { Logger } from './logger.js';
import { KeyService, presentedKey, type Principal } from './auth.js';
import { ApiError, ValidationFailure, errorBody, forbidden, toApiError, unauthorized, type ErrorStyle } from './errors.js';
import { toValidationDetails } from './validation.js';
import { loadSpec, type SpecDocument } from './spec.js';
import { coerceFormBody } from './forms.js';
import type { Services } from './services.js';
import { handlers } from '../handlers/index.js';
import { installFastRouter } from './router.js';
import { transcriptionBodies } from './media/upload.js';
import { opsRoutes } from './ops-routes.js';
import { docsRouter } from './docs.js';
import { cors, securityHeaders } from './security.js';

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
  req: Request;
  res: Response;
  deps: Deps;
  operation: Operation;
  requestId: string;
  principal: Principal | null;
  params: Record<string, any>;
  query: Record<string, any>;
  body: any;
  log: Logger;
}

/** A handler returns a JSON reply, or writes the response itself (streams) and returns nothing. */
export interface Reply {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type Handler = (ctx: HandlerCtx) => Promise<Reply | void> | Reply | void;

type Locals = { requestId: string; principal?: Principal | null; authChecked?: boolean };

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

function errorStyleFor(path: string): ErrorStyle {
  return path === '/v1/messages' || path.startsWith('/v1/messages/') ? 'anthropic' : 'openai';
}

export function sendError(req: Request, res: Response, err: unknown, log: Logger): void {
  const requestId = (res.locals as Locals).requestId ?? '';
  // The client went away mid-request (its abort reached the upstream call): nobody to answer, nothing failed.
  if (res.destroyed || req.socket?.destroyed) {
    log.debug({ requestId, path: req.path }, 'client disconnected before the answer');
    return;
  }
  const apiErr = toApiError(err);
  if (apiErr.status >= 500 && !(err instanceof ApiError)) log.error({ err, requestId, path: req.path }, 'unhandled error');
  if (res.headersSent) {
    res.end();
    return;
  }
  for (const [k, v] of Object.entries(apiErr.headers)) res.setHeader(k, v);
  res.status(apiErr.status).json(errorBody(apiErr, requestId, errorStyleFor(req.path)));
}

function securityMode(op: Operation, doc: SpecDocument): 'public' | 'required' | 'optional' {
  const sec = (op.security ?? (doc as { security?: unknown[] }).security ?? []) as Array<Record<string, unknown>>;
  if (!sec.length) return 'public';
  return sec.some((r) => Object.keys(r).length === 0) ? 'optional' : 'required';
}

export async function createApp(deps: Deps, spec: SpecDocument = loadSpec().doc): Promise<express.Express> {
  const { config, logger } = deps;

  const api = new OpenAPIBackend({
    definition: safeIntegers(structuredClone(spec)) as unknown as Document,
    coerceTypes: true,
    // Validators compile lazily per operation and status (start-up stays fast); this also skips
    // openapi-backend's own document check, which knows only OpenAPI 3.0 — `npm run lint:spec` (redocly)
    // checks the 3.1 document instead.
    quick: true,
    // `/v1/status/` is a path of its own in the interface; the app rewrites `/v1/status` to it.
    ignoreTrailingSlashes: false,
    // Runs after routing, before validation: form fields arrive as strings and are coerced by their schema.
    validate: (c: Context, req: Request) => {
      coerceFormBody(c.operation, req);
      return true;
    },
    // openapi-backend passes per-context options (parameters are coerced from strings). The schema self-check
    // is off: dereferenced sub-schemas are shared objects that trip it, and redocly lints the document.
    customizeAjv: (_orig, ajvOpts) => {
      const ajv = new Ajv2020({ ...(ajvOpts as object), strict: false, allErrors: true, validateSchema: false });
      addFormats(ajv);
      return ajv as any;
    },
  });

  // Also called before openapi-backend by the upload parser (src/media/upload.ts), which reads no upload
  // without a valid key; the result is cached for the request.
  const authenticate = async (req: Request, res: Response): Promise<boolean> => {
    const locals = res.locals as Locals;
    if (!locals.authChecked) {
      locals.authChecked = true;
      locals.principal = await deps.keys.authenticate(presentedKey(req.headers));
    }
    return !!locals.principal;
  };
  api.registerSecurityHandler('bearerAuth', (_c: Context, req: Request, res: Response) => authenticate(req, res));
  api.registerSecurityHandler('apiKeyHeader', (_c: Context, req: Request, res: Response) => authenticate(req, res));

  api.register({
    unauthorizedHandler: (_c: Context, req: Request, res: Response) => sendError(req, res, unauthorized(), logger),
    validationFail: (c: Context, req: Request, res: Response) =>
      sendError(req, res, new ValidationFailure(toValidationDetails(c.validation.errors as any)), logger),
    notFound: (_c: Context, req: Request, res: Response) =>
      sendError(req, res, new ApiError(404, 'not_found_error', `No route for ${req.method} ${req.path}.`, 'route_not_found'), logger),
    methodNotAllowed: (_c: Context, req: Request, res: Response) => {
      const allowed = allowedMethods(api, req.path);
      if (allowed.length) res.setHeader('Allow', allowed.join(', ').toUpperCase());
      sendError(req, res, new ApiError(405, 'invalid_request_error', `Method ${req.method} is not allowed on ${req.path}.`, 'method_not_allowed'), logger);
    },
  });

  for (const [operationId, handler] of Object.entries(handlers)) {
    api.register(operationId, async (c: Context, req: Request, res: Response) => {
      const locals = res.locals as Locals;
      const op = c.operation;
      const mode = securityMode(op, spec);
      if (mode === 'optional' && presentedKey(req.headers) && !locals.principal) return sendError(req, res, unauthorized(), logger);
      if ((op as { 'x-admin-only'?: boolean })['x-admin-only'] && !locals.principal?.admin) {
        return sendError(req, res, forbidden('This operation needs the admin key.'), logger);
      }
      const ctx: HandlerCtx = {
        req, res, deps, operation: op, requestId: locals.requestId, principal: locals.principal ?? null,
        // path params arrive URL-decoded from the router, so `%2F` ids carry their slash
        params: c.request.params ?? {}, query: c.request.query ?? {}, body: c.request.requestBody,
        log: logger,
      };
      try {
        // Per-key rate limits (src/limits): a 429 here never reaches the handler; the concurrency slot is
        // given back when the response is over (a stream: after its last byte).
        const admission = await deps.services.limits.admit(ctx.principal);
        if (admission) {
          for (const [k, v] of Object.entries(admission.headers)) res.setHeader(k, v);
          res.once('close', admission.release);
        }
        const reply = await (handler as Handler)(ctx);
        if (!reply || res.headersSent) return;
        sendReply(api, op, req, res, reply, config.validateResponses, logger);
      } catch (err) {
        if (config.validateResponses && err instanceof ApiError && !(err instanceof ValidationFailure)) {
          checkResponse(api, op, err.status, errorBody(err, locals.requestId, errorStyleFor(req.path)), logger);
        }
        sendError(req, res, err, logger);
      }
    });
  }
  await api.init();
  installFastRouter(api);

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.reliability.trustProxy);
  app.set('query parser', 'extended');
  const { inflight } = deps.services;
  app.use(securityHeaders);
  app.use((req: Request, res: Response, next: NextFunction) => {
    // Counted until the response is over; the handler is counted apart (below) until its settlement is done.
    res.once('close', inflight.enter());
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID_RE.test(incoming) ? incoming : crypto.randomUUID();
    (res.locals as Locals).requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const start = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      logger.info({ requestId, method: req.method, path: req.path, status: res.statusCode, ms }, 'request');
      const operation = res.locals.operationId ?? api.matchOperation({ method: req.method, path: req.path, headers: {} })?.operationId;
      deps.services.metrics.httpRequest(operation ?? 'unmatched', res.statusCode, ms);
    });
    next();
  });
  app.use(cors(config.reliability));
  // A path that is not valid percent-encoded UTF-8 cannot name a resource; the router would throw on it.
  app.use((req: Request, res: Response, next: NextFunction) => {
    try {
      decodeURIComponent(req.path);
    } catch {
      return sendError(req, res, new ApiError(400, 'invalid_request_error', 'The URL path is not valid percent-encoded UTF-8.', 'malformed_path'), logger);
    }
    next();
  });
  // A stopping instance finishes what it has and refuses new work, so a load balancer retries elsewhere.
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!inflight.draining) return next();
    res.setHeader('Connection', 'close');
    sendError(req, res, new ApiError(503, 'service_unavailable', 'This gateway instance is shutting down; retry the request.', 'shutting_down', null, { 'Retry-After': '1' }), logger);
  });
  // `/v1/status` and `/v1/status/` are one operation.
  app.use((req: Request, _res: Response, next: NextFunction) => {
    if (req.path === '/v1/status') req.url = '/v1/status/' + req.url.slice('/v1/status'.length);
    next();
  });
  // The interactive API reference (HTML and static assets, not spec operations; its CSP is in src/docs.ts).
  app.use(docsRouter());
  // Transcription bodies (multipart streamed with busboy, base64 forms up to the upload limit) before the
  // generic parsers; their fields are then validated by the spec like any body.
  app.use(transcriptionBodies({ limit: config.uploadLimit, authenticate, fail: (req, res, err) => sendError(req, res, err, logger) }));
  app.use(express.json({ limit: config.jsonBodyLimit, type: ['application/json', 'application/*+json'], verify: refuseDeepJson }));
  app.use(express.urlencoded({ limit: config.jsonBodyLimit, extended: false }));
  // Plain routes outside the JSON contract: /metrics and the HTML /status page (src/ops-routes.ts).
  app.use(opsRoutes(deps));
  // openapi-backend copies the request with `{...req}`; Express 5 keeps path and query on getters, so it gets a
  // plain object.
  app.use(async (req: Request, res: Response) => {
    const leave = inflight.enter();
    try {
      await api.handleRequest({ method: req.method, path: req.path, query: req.query as Record<string, string>, body: req.body, headers: req.headers as Record<string, string> }, req, res);
    } finally {
      leave();
    }
  });
  app.use((err: any, req: Request, res: Response, _next: NextFunction) => {
    if (err?.code === 'json_too_deep') {
      return sendError(req, res, new ValidationFailure([{ loc: ['body'], msg: String(err.message), type: 'json_invalid' }]), logger);
    }
    if (err?.type === 'entity.parse.failed') {
      return sendError(req, res, new ValidationFailure([{ loc: ['body'], msg: `Malformed JSON: ${err.message}`, type: 'json_invalid' }]), logger);
    }
    if (err?.type === 'entity.too.large' || err?.status === 413) {
      return sendError(req, res, new ApiError(413, 'invalid_request_error', `Request body is larger than the limit of ${config.jsonBodyLimit} bytes.`, 'payload_too_large'), logger);
    }
    if (err?.type === 'encoding.unsupported' || err?.type === 'charset.unsupported') {
      return sendError(req, res, new ApiError(415, 'invalid_request_error', String(err.message), 'unsupported_media_type'), logger);
    }
    if (typeof err?.status === 'number' && err.status >= 400 && err.status < 500) {
      return sendError(req, res, new ApiError(err.status, 'invalid_request_error', String(err.message), 'bad_request'), logger);
    }
    sendError(req, res, err, logger);
  });
  return app;
}

/** JSON nested deeper than this is refused before parsing (no API shape comes near it). */
export const MAX_JSON_DEPTH = 128;

/**
 * Parsing a 100,000-deep array works, but every later step that walks it (validation, JSON.stringify to an
 * upstream, structuredClone) overflows the stack. One pass over the raw bytes, before the parse, counts the
 * nesting outside strings and refuses the body with a 422.
 */
function refuseDeepJson(_req: unknown, _res: unknown, buf: Buffer): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) {
        throw Object.assign(new Error(`JSON nested deeper than ${MAX_JSON_DEPTH} levels.`), { status: 422, code: 'json_too_deep' });
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
}

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

function allowedMethods(api: OpenAPIBackend, path: string): string[] {
  return api.getOperations().filter((o) => {
    const re = new RegExp('^' + o.path.split(/\{[^}]+\}/).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]+') + '/?$');
    return re.test(path);
  }).map((o) => o.method);
}

function sendReply(api: OpenAPIBackend, op: Operation, req: Request, res: Response, reply: Reply, validate: boolean, log: Logger) {
  const status = reply.status ?? 200;
  if (validate) checkResponse(api, op, status, reply.body, log);
  if (reply.headers) for (const [k, v] of Object.entries(reply.headers)) res.setHeader(k, v);
  res.status(status).json(reply.body);
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
