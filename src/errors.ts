/**
 * The one error module: every failure becomes an ApiError, and one function turns an ApiError into a status
 * and a body that matches the spec (`Error`, `HTTPValidationError`, or Anthropic's shape on /v1/messages).
 */

export interface ValidationDetail {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export class ValidationFailure extends ApiError {
  constructor(readonly detail: ValidationDetail[]) {
    super(422, 'invalid_request_error', detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '), 'validation_error');
  }
}

export const badRequest = (msg: string, param: string | null = null) => new ApiError(400, 'invalid_request_error', msg, 'bad_request', param);
export const unauthorized = (msg = 'Missing or invalid API key. Send it as "Authorization: Bearer <key>".') =>
  new ApiError(401, 'authentication_error', msg, 'invalid_api_key', null, { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (msg: string) => new ApiError(403, 'permission_error', msg, 'forbidden');
export const notFound = (msg: string) => new ApiError(404, 'not_found_error', msg, 'not_found');
export const insufficientCredits = (msg: string) => new ApiError(402, 'insufficient_credits', msg, 'insufficient_credits');

/** Anthropic's error `type` for a status, for the /v1/messages error shape. */
export function anthropicErrorType(status: number): string {
  if (status === 400 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'billing_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529 || status === 503) return 'overloaded_error';
  if (status === 504) return 'timeout_error';
  return 'api_error';
}

export type ErrorStyle = 'openai' | 'anthropic';

export function errorBody(err: ApiError, requestId: string, style: ErrorStyle = 'openai'): unknown {
  if (err instanceof ValidationFailure) return { detail: err.detail };
  if (style === 'anthropic') return { type: 'error', error: { type: anthropicErrorType(err.status), message: err.message } };
  return { error: { message: err.message, type: err.type, code: err.code, param: err.param, request_id: requestId } };
}

/** Anything thrown that is not an ApiError is a 500 with a safe message (details go to the log only). */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(500, 'server_error', 'Internal server error.', 'internal_error');
}
