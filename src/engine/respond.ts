/**
 * Writing a stream to the client: SSE headers sent at once, each frame written as it is made (no buffering),
 * backpressure respected (a slow reader pauses the upstream instead of growing memory), and the upstream
 * aborted when the client leaves. Frames made in the same tick (the headers and the first frame; events that
 * arrived in one read from the upstream) leave in one write at the end of the tick, never later, so nothing waits
 * for a later event: the socket is corked until then, and the tick's frames are joined into one string written
 * once. (Each `res.write` of a chunked response is four writes to the socket's buffer, the chunk's size line, the
 * frame and two line ends, each one entry of the `writev` that leaves at the uncork: 24 frames were ~100 entries.)
 * A stream is ended with `endSse`, never `res.end()`: the tick's last frames and the end of the body leave in one
 * write (after a plain `res.end()` the frames still held for the tick would be dropped).
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
  holdForTick(res);
  res.flushHeaders();
  res.socket?.setNoDelay(true);
}

/** This tick's frames, joined; undefined when nothing is held for the end of the tick. */
const FRAMES = Symbol('sse frames of this tick');
type SseResponse = ServerResponse & { [FRAMES]?: string };

/** Holds this tick's writes on `res` together (corked, frames joined); they leave when the tick ends. */
function holdForTick(res: SseResponse): void {
  if (res[FRAMES] !== undefined) return;
  res[FRAMES] = '';
  res.cork();
  process.nextTick(endOfTick, res);
}

/** Writes the frames held and uncorks, at the end of the tick (a no-op after `endSse`, which does both itself). */
function endOfTick(res: SseResponse): void {
  const frames = res[FRAMES];
  if (frames === undefined) return;
  res[FRAMES] = undefined;
  if (frames && !res.writableEnded && !res.destroyed) res.write(frames);
  res.uncork();
}

/** Frames joined up to this many characters are written at once (still corked): a stream's buffer is 16 KiB. */
const JOIN_LIMIT = 16 * 1024;

/**
 * Writes a frame (at the end of this tick, with the others of the tick, or at once when they reach `JOIN_LIMIT`).
 * Returns a promise (resolved when the socket can take more) only when the socket is full; callers await it only
 * then, since awaiting the usual `undefined` costs a microtask step per stream event.
 */
export function writeFrame(res: ServerResponse, frame: string): Promise<void> | void {
  if (!frame || res.writableEnded || res.destroyed) return;
  const r = res as SseResponse;
  holdForTick(r);
  const frames = r[FRAMES] + frame;
  if (frames.length < JOIN_LIMIT) {
    r[FRAMES] = frames;
    if (!res.writableNeedDrain) return;
  } else {
    r[FRAMES] = '';
    if (res.write(frames)) return;
  }
  return new Promise((resolve) => {
    const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Ends a stream begun with `startSse`: this tick's frames and the end of the body in one write. */
export function endSse(res: ServerResponse): void {
  const r = res as SseResponse;
  const frames = r[FRAMES];
  // The tick's scheduled endOfTick then finds nothing to do.
  r[FRAMES] = undefined;
  if (frames && !res.writableEnded && !res.destroyed) res.end(frames);
  else res.end();
  if (frames !== undefined) res.uncork();
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
