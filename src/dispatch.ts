/**
 * The operation dispatcher: route (src/router.ts) -> security (auth before validation, so a keyless request is a
 * 401, not a 422) -> request validation -> the handler from handlers/index.ts -> the reply. It keeps
 * openapi-backend's rules and uses its compiled ajv validators, but parses each request once: openapi-backend's
 * own `handleRequest` parses it three times (headers mapped with lodash, query deep-cloned, path re-matched),
 * which cost more than the gateway's own work on a chat request.
 *
 * What the validators see is what openapi-backend builds: `{ path, query, header, cookie, requestBody }`, query
 * values coerced by their schemas, a single value of an array parameter made an array, unknown query parameters
 * refused. The spec uses no cookie parameters, no `content` parameters and no `explode: false`; the dispatcher
 * refuses to start on a spec that does, rather than validate such parameters differently.
 */
import { Buffer } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OpenAPIBackend, Operation } from 'openapi-backend';
import type { ValidateFunction } from 'ajv';
import qs from 'qs';
import etag from 'etag';
import fresh from 'fresh';
import { presentedKey, type Principal } from './auth.js';
import { ApiError, ValidationFailure, errorBody, forbidden, toApiError, unauthorized, type ErrorStyle } from './errors.js';
import { toValidationDetails } from './validation.js';
import { coerceFormBody } from './forms.js';
import type { Routes } from './router.js';
import type { Logger } from './logger.js';
import { encodeUtf8 } from './utf8.js';

/** Per-request state kept on the response (`res.locals`, as Express keeps it; the plain routes read it too). */
export interface Locals {
  requestId: string;
  /** A monitoring probe (src/app.ts isProbe): counted in flight, not as traffic (src/reliability/drain.ts). */
  probe: boolean;
  principal?: Principal | null;
  authChecked?: boolean;
  operationId?: string;
}

export type GatewayRequest = IncomingMessage & { body?: unknown };
export type GatewayResponse = ServerResponse & { locals: Locals };

/** A handler returns a JSON reply, or writes the response itself (streams) and returns nothing. */
export interface Reply {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
  /** `body` as JSON text, when the handler made it (it must be JSON.stringify(body)'s output): sent in its place. */
  text?: string;
}

export const localsOf = (res: ServerResponse): Locals => (res as GatewayResponse).locals;

/** The path of a request URL, without its query string. */
export function pathOf(url: string | undefined): string {
  const u = url || '/';
  const q = u.indexOf('?');
  return q < 0 ? u : u.slice(0, q);
}

export function errorStyleFor(path: string): ErrorStyle {
  return path === '/v1/messages' || path.startsWith('/v1/messages/') ? 'anthropic' : 'openai';
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * A JSON answer: the body serialised once, its length known. With the request, a GET 200 also carries a weak ETag
 * of its body (as Express gave one), and a client polling with a matching If-None-Match gets a bodiless 304; a HEAD
 * gets the GET's head (Node sends no body to a HEAD request).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>, req?: IncomingMessage, json?: string): void {
  // A large body is encoded once here (src/utf8.ts), and its length and tag read from the bytes.
  const text = encodeUtf8(json ?? JSON.stringify(body));
  // One list for writeHead (src/head.ts: with the queued headers, one call instead of a setHeader each).
  const head: Array<string | number> = [];
  let typed = false;
  if (headers) {
    for (const k in headers) {
      head.push(k, headers[k]);
      if (k.length === 12 && k.toLowerCase() === 'content-type') typed = true;
    }
  }
  if ((req?.method === 'GET' || req?.method === 'HEAD') && status === 200) {
    const tag = etag(text, { weak: true });
    head.push('ETag', tag);
    if (fresh(req.headers, { etag: tag })) {
      res.writeHead(304, head);
      res.end();
      return;
    }
  }
  if (!typed && !res.hasHeader('Content-Type')) head.push('Content-Type', JSON_TYPE);
  head.push('Content-Length', typeof text === 'string' ? Buffer.byteLength(text) : text.length);
  res.writeHead(status, head);
  res.end(text);
}

export function sendError(req: IncomingMessage, res: ServerResponse, err: unknown, log: Logger): void {
  const requestId = localsOf(res)?.requestId ?? '';
  const path = pathOf(req.url);
  // The client went away mid-request (its abort reached the upstream call): nobody to answer, nothing failed.
  if (res.destroyed || req.socket?.destroyed) {
    log.debug({ requestId, path }, 'client disconnected before the answer');
    return;
  }
  const apiErr = toApiError(err);
  if (apiErr.status >= 500 && !(err instanceof ApiError)) log.error({ err, requestId, path }, 'unhandled error');
  if (res.headersSent) {
    res.end();
    return;
  }
  sendJson(res, apiErr.status, errorBody(apiErr, requestId, errorStyleFor(path)), apiErr.headers);
}

type Requirement = string[];

/** What one operation needs per request, worked out once. */
interface CompiledOp {
  op: Operation;
  id: string;
  /** Security requirements, each a list of schemes that must all pass; empty = public. */
  requirements: Requirement[];
  /** `security: [{}, …]`: a key is optional, but a presented one must be valid. */
  optional: boolean;
  adminOnly: boolean;
  /** Query parameters declared as arrays (a single value becomes a one-element array). */
  arrayQuery: string[];
  /** The operation declares path / header parameters (validation may coerce them). */
  pathParams: boolean;
  headerParams: boolean;
  validators?: ValidateFunction[];
}

export interface DispatchOptions {
  api: OpenAPIBackend;
  routes: Routes;
  spec: { security?: unknown[] };
  logger: Logger;
  /** Resolves and caches the caller (true when a valid key was presented). */
  /** A plain boolean when it can tell at once (a cached key), else a promise. */
  authenticate: (req: GatewayRequest, res: GatewayResponse) => boolean | Promise<boolean>;
  /** Schemes the authenticate function answers for. */
  schemes: string[];
  /** Runs the operation once the request is known to be authorised, permitted and valid. */
  run: (op: Operation, req: GatewayRequest, res: GatewayResponse, input: { params: Record<string, string>; query: Record<string, any>; body: unknown }) => Promise<void>;
}

export class Dispatcher {
  private readonly ops = new Map<Operation, CompiledOp>();

  constructor(private readonly o: DispatchOptions) {
    const global = o.spec.security ?? [];
    for (const op of o.routes.operations) {
      for (const p of (op.parameters ?? []) as Array<{ in: string; name: string; content?: unknown; explode?: boolean }>) {
        if (p.in === 'cookie' || p.content || p.explode === false) {
          throw new Error(`${op.operationId}: parameter ${p.name} (${p.in}) uses a form the dispatcher does not parse (cookie, content or explode: false)`);
        }
      }
      const sec = (op.security ?? global) as Array<Record<string, unknown>>;
      this.ops.set(op, {
        op,
        id: op.operationId!,
        requirements: sec.map((r) => Object.keys(r)),
        optional: sec.some((r) => Object.keys(r).length === 0),
        adminOnly: !!(op as { 'x-admin-only'?: boolean })['x-admin-only'],
        arrayQuery: ((op.parameters ?? []) as Array<{ in: string; name: string; schema?: { type?: unknown } }>)
          .filter((p) => p.in === 'query' && p.schema?.type === 'array').map((p) => p.name),
        pathParams: ((op.parameters ?? []) as Array<{ in: string }>).some((p) => p.in === 'path'),
        headerParams: ((op.parameters ?? []) as Array<{ in: string }>).some((p) => p.in === 'header'),
      });
    }
  }

  /** Routes, authenticates, validates and runs one request whose body (if any) is already parsed. */
  async dispatch(req: GatewayRequest, res: GatewayResponse, body: unknown): Promise<void> {
    const { logger } = this.o;
    const url = req.url || '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const m = this.o.routes.match(req.method!, path);
    if (m === 404) {
      return sendError(req, res, new ApiError(404, 'not_found_error', `No route for ${req.method} ${path}.`, 'route_not_found'), logger);
    }
    if (m === 405) {
      const allowed = this.o.routes.allowed(path);
      if (allowed.length) res.setHeader('Allow', allowed.join(', '));
      return sendError(req, res, new ApiError(405, 'invalid_request_error', `Method ${req.method} is not allowed on ${path}.`, 'method_not_allowed'), logger);
    }
    const c = this.ops.get(m.op)!;
    const locals = res.locals;
    locals.operationId = c.id;

    if (c.requirements.length) {
      const checked = this.o.authenticate(req, res);
      const ok = checked instanceof Promise ? await checked : checked;
      const { schemes } = this.o;
      if (!c.requirements.some((r) => r.every((s) => ok && schemes.includes(s)))) return sendError(req, res, unauthorized(), logger);
    }

    // Form fields arrive as strings: coerced by their schema before validation (src/forms.ts).
    req.body = body;
    coerceFormBody(c.op, req as { headers: Record<string, unknown>; body?: unknown });
    const query: Record<string, any> = q < 0 ? {} : qs.parse(url.slice(q + 1), { allowPrototypes: true });
    for (const name of c.arrayQuery) if (typeof query[name] === 'string') query[name] = [query[name]];
    // Validation coerces declared parameters in place: copies only where the operation declares some.
    const parameters: Record<string, unknown> = { path: c.pathParams ? { ...m.params } : m.params, query, header: c.headerParams ? { ...req.headers } : req.headers, cookie: {} };
    const ct = req.headers['content-type'];
    if ((typeof req.body === 'object') || (ct !== undefined && ct.split(';')[0].trim().toLowerCase() === 'application/json')) parameters.requestBody = req.body;
    c.validators ??= this.o.api.validator.getRequestValidatorsForOperation(c.id) as ValidateFunction[];
    let errors: unknown[] | undefined;
    for (const validate of c.validators) {
      validate(parameters);
      if (validate.errors) (errors ??= []).push(...validate.errors);
    }
    if (errors) return sendError(req, res, new ValidationFailure(toValidationDetails(errors as any)), logger);
    // Where a key is optional, a presented one must still be valid; admin operations need the admin key.
    if (c.optional && presentedKey(req.headers) && !locals.principal) return sendError(req, res, unauthorized(), logger);
    if (c.adminOnly && !locals.principal?.admin) return sendError(req, res, forbidden('This operation needs the admin key.'), logger);

    await this.o.run(c.op, req, res, { params: m.params, query: parameters.query as Record<string, any>, body: req.body });
  }
}
