/**
 * Writing a stream to the client: SSE headers sent at once, each frame written as it is made (no buffering),
 * backpressure respected (a slow reader pauses the upstream instead of growing memory), and the upstream
 * aborted when the client leaves. Frames made in the same tick (the headers and the first frame; events that
 * arrived in one read from the upstream) leave in one write: the socket is corked until the end of the tick,
 * never longer, so nothing waits for a later event.
 */
import type { ServerResponse } from 'node:http';
import { Cancellation } from '../cancel.js';

/**
 * `Connection` is Node's to write: keep-alive (with its Keep-Alive timeout) for a client that keeps the connection,
 * close for one that asked to close it or whose connection reached the server's request limit. (Set by hand it
 * said keep-alive in every case.)
 */
export function startSse(res: ServerResponse, headers: Record<string, string>): void {
  // One list for writeHead (src/head.ts: with the queued headers, one call instead of a setHeader each).
  const head = ['Content-Type', 'text/event-stream; charset=utf-8', 'Cache-Control', 'no-cache, no-transform', 'X-Accel-Buffering', 'no'];
  for (const k in headers) head.push(k, headers[k]);
  res.writeHead(200, head);
  corkForTick(res);
  res.flushHeaders();
  res.socket?.setNoDelay(true);
}

const uncork = (res: ServerResponse) => res.uncork();

/** Holds this tick's writes on `res` together; they leave when the tick ends. */
function corkForTick(res: ServerResponse): void {
  if (res.writableCorked) return;
  res.cork();
  process.nextTick(uncork, res);
}

/**
 * Writes a frame. Returns a promise (resolved when the socket can take more) only when the socket is full; callers
 * await it only then, since awaiting the usual `undefined` costs a microtask step per stream event.
 */
export function writeFrame(res: ServerResponse, frame: string): Promise<void> | void {
  if (!frame || res.writableEnded || res.destroyed) return;
  corkForTick(res);
  if (!res.write(frame)) {
    return new Promise((resolve) => {
      const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
      res.on('drain', done);
      res.on('close', done);
    });
  }
}

/**
 * A signal (AbortSignal's shape, src/cancel.ts) that fires when the client disconnects before the response
 * finished.
 */
export function clientGone(res: ServerResponse): Cancellation {
  const gone = new Cancellation();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  return gone;
}
