/**
 * The response head written in one call. Every answer carries the prelude's headers (the security headers and the
 * request id) and, after admission, the rate-limit headers. Set one by one with `setHeader`, each is validated,
 * lower-cased and stored in the response's header map, and the map is walked again when the head is written:
 * ~3.7 µs for a streamed answer's 17 headers in a loop, against ~1.4 µs when they are given to `writeHead` as
 * one list (Node then validates each once and writes it straight into the head). In the gateway's profile the
 * `setHeader`s and the head's writing of a stream cost ~50–70 µs on a slow day (docs/PERFORMANCE.md, session 17).
 *
 * So those headers are queued on the response (`queueHeaders`) and `writeHead` is replaced on it, for the
 * answers that do not go through here as well as for those that do:
 * - when nothing was set with `setHeader`, the queued headers and the call's own go to Node's `writeHead` as one
 *   flat list (a header the call names replaces the queued one of that name);
 * - otherwise (Express's routes, CORS, an `Allow`, `Connection: close`) the queued headers are set as if they had
 *   been set first: a header set since, or named by the call, wins, as before.
 * The hot answers (`sendJson`, `startSse`) hand their headers to `writeHead` as a list.
 */
import { ServerResponse } from 'node:http';

const QUEUED = Symbol('queued headers');
type Queued = ServerResponse & { [QUEUED]?: Array<string | number> };
type HeadList = Array<string | number>;

const nodeWriteHead = ServerResponse.prototype.writeHead;

/**
 * Starts the response's queue with `list` and then `more` (each name, value, name, value, …; copied), and takes over
 * its `writeHead`.
 */
export function startHead(res: ServerResponse, list: readonly (string | number)[], ...more: Array<string | number>): void {
  // slice and push, not concat: Array.prototype.concat's generic steps (Symbol.isConcatSpreadable, a species
  // constructor) were ~1,500 instructions a request (docs/PERFORMANCE.md, session 53)
  const queue = list.slice();
  for (let i = 0; i < more.length; i++) queue.push(more[i]);
  (res as Queued)[QUEUED] = queue;
  res.writeHead = writeHead as ServerResponse['writeHead'];
}

/** Adds headers to the queue (after `startHead`); before the head is written they go out with it. */
export function queueHeaders(res: ServerResponse, headers: Record<string, string>): void {
  const q = (res as Queued)[QUEUED];
  if (!q || res.headersSent) {
    for (const k in headers) res.setHeader(k, headers[k]);
    return;
  }
  for (const k in headers) q.push(k, headers[k]);
}

/** Header names are ASCII tokens: equal ignoring case, compared a character at a time (no lower-cased copies). */
function sameName(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if ((a.charCodeAt(i) | 0x20) !== (b.charCodeAt(i) | 0x20)) return false;
  return a.toLowerCase() === b.toLowerCase(); // the bit trick equates a few non-letters too (`@` and `` ` ``): confirm
}

/**
 * `queued` without the names `own` gives (case-insensitive); `queued` itself when `own` names none of them. Either way
 * an array of the caller's own, which writeHead then appends `own` to.
 */
function without(queued: HeadList, own: HeadList): HeadList {
  let drop: boolean[] | undefined;
  for (let i = 0; i < own.length; i += 2) {
    const name = String(own[i]);
    for (let j = 0; j < queued.length; j += 2) if (sameName(queued[j] as string, name)) (drop ??= [])[j] = true;
  }
  if (!drop) return queued;
  const out: HeadList = [];
  for (let j = 0; j < queued.length; j += 2) if (!drop[j]) out.push(queued[j], queued[j + 1]);
  return out;
}

function writeHead(this: Queued, status: number, reason?: unknown, headers?: unknown): ServerResponse {
  const queued = this[QUEUED];
  if (queued === undefined) return (nodeWriteHead as Function).call(this, status, reason, headers);
  this[QUEUED] = undefined;
  const hasReason = typeof reason === 'string';
  const own = hasReason ? headers : reason;
  const flat = own == null || (Array.isArray(own) && (own.length === 0 || !Array.isArray(own[0])));
  if (flat && this.getHeaderNames().length === 0) {
    let list = queued;
    if (own != null && (own as HeadList).length !== 0) {
      // the queue is this response's own (startHead's copy) and done with: appended to, not copied by concat
      list = without(queued, own as HeadList);
      for (let i = 0; i < (own as HeadList).length; i++) list.push((own as HeadList)[i]);
    }
    return hasReason ? (nodeWriteHead as Function).call(this, status, reason, list) : (nodeWriteHead as Function).call(this, status, list);
  }
  for (let i = 0; i < queued.length; i += 2) {
    const name = queued[i] as string;
    if (!this.hasHeader(name)) this.setHeader(name, queued[i + 1]);
  }
  return (nodeWriteHead as Function).call(this, status, reason, headers);
}
