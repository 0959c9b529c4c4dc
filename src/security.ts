/**
 * Browser-facing protections of a JSON API. Every response carries headers that stop content sniffing, framing
 * and referrer leaks (the API serves no HTML; the CSP forbids everything should a browser render a body).
 * CORS is closed unless CORS_ORIGINS lists origins: then only those origins get CORS headers, and credentials
 * (`Access-Control-Allow-Credentials`) only when CORS_ALLOW_CREDENTIALS is set — never to `*`.
 */
import crypto from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ReliabilityConfig } from './config.js';

export const SECURITY_HEADERS: Record<string, string> = {
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Resource-Policy': 'same-site',
};

/** The same as a flat list (name, value, …): the prelude (src/app.ts) starts every response's head with it (src/head.ts). */
export const SECURITY_HEADER_LIST: readonly string[] = Object.entries(SECURITY_HEADERS).flat();

const ALLOW_HEADERS = 'Authorization, Content-Type, X-Api-Key, X-Request-Id, Anthropic-Version, Anthropic-Beta';
const EXPOSE_HEADERS = 'X-Request-Id, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, '
  + 'X-RateLimit-Limit-Tokens, X-RateLimit-Remaining-Tokens, X-Gateway-Provider, X-Gateway-Model';

/** The CORS policy for one request; true when it answered the request itself (a preflight). */
export function corsPolicy(cfg: Pick<ReliabilityConfig, 'corsOrigins' | 'corsAllowCredentials'>) {
  const any = cfg.corsOrigins.includes('*');
  const listed = new Set(cfg.corsOrigins.filter((o) => o !== '*'));
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const origin = req.headers.origin;
    const preflight = req.method === 'OPTIONS' && origin !== undefined && req.headers['access-control-request-method'] !== undefined;
    const allowed = origin !== undefined && (listed.has(origin) || any);
    if (allowed) {
      if (listed.has(origin)) {
        res.setHeader('Access-Control-Allow-Origin', origin);
        const vary = res.getHeader('Vary');
        res.setHeader('Vary', vary ? `${String(vary)}, Origin` : 'Origin');
        if (cfg.corsAllowCredentials) res.setHeader('Access-Control-Allow-Credentials', 'true');
      } else {
        res.setHeader('Access-Control-Allow-Origin', '*');
      }
      res.setHeader('Access-Control-Expose-Headers', EXPOSE_HEADERS);
    }
    if (!preflight) return false;
    // A preflight is answered here: with the CORS headers when the origin is allowed, without them (so the
    // browser refuses the call) when it is not.
    if (allowed) {
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', ALLOW_HEADERS);
      res.setHeader('Access-Control-Max-Age', '600');
    }
    res.statusCode = 204;
    res.end();
    return true;
  };
}

/**
 * Requests Node's HTTP parser refuses before Express sees them (a URL or headers over the 16 KB limit,
 * malformed HTTP) get the spec's Error body and a request id, like every other answer, instead of a bare status.
 */
export function protectServer(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (err as { code?: string }).code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const requestId = crypto.randomUUID();
    const message = tooLarge ? 'The request line or headers are larger than the server accepts (16 KB).' : 'Malformed HTTP request.';
    // The request line, as far as it arrived, tells whether the caller speaks the Anthropic format.
    const line = (err as { rawPacket?: Buffer }).rawPacket?.subarray(0, 64).toString('latin1') ?? '';
    const body = JSON.stringify(/^[A-Z]+ \/v1\/messages(?:[/?#\s]|$)/.test(line)
      ? { type: 'error', error: { type: 'invalid_request_error', message } }
      : { error: { message, type: 'invalid_request_error', code: tooLarge ? 'request_header_too_large' : 'bad_request', param: null, request_id: requestId } });
    const head = [`HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}`, 'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`, `X-Request-Id: ${requestId}`, 'Connection: close',
      ...Object.entries(SECURITY_HEADERS).map(([k, v]) => `${k}: ${v}`)];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  });
}
