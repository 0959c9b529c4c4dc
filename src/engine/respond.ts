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
 * A stream's response and the frames held for the end of this tick, on an object of the gateway's own (until session
 * 30 a symbol property added to each ServerResponse, which changed the shape of Node's object per response; the
 * instructions counted showed no gain of its own from the move).
 */
export class SseOut {
  /** This tick's frames, joined; undefined when nothing is held for the end of the tick. */
  frames: string | undefined = undefined;
  /**
   * Every frame held is ASCII (its writer said so): the tick's string is written as latin1, which Node neither
   * measures nor encodes as UTF-8 (one copy), instead of UTF-8 (a length scan, then the encoding).
   */
  ascii = true;

  constructor(readonly res: ServerResponse) {}
}

/**
 * `Connection` is Node's to write: keep-alive (with its Keep-Alive timeout) for a client that keeps the connection,
 * close for one that asked to close it or whose connection reached the server's request limit. (Set by hand it
 * said keep-alive in every case.)
 */
export function startSse(res: ServerResponse, headers: Record<string, string>): SseOut {
  // One list for writeHead (src/head.ts: with the queued headers, one call instead of a setHeader each).
  const head = ['Content-Type', 'text/event-stream; charset=utf-8', 'Cache-Control', 'no-cache, no-transform', 'X-Accel-Buffering', 'no'];
  for (const k in headers) head.push(k, headers[k]);
  res.writeHead(200, head);
  const out = new SseOut(res);
  holdForTick(out);
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  return out;
}

/** Holds this tick's writes on `out` together (corked, frames joined); they leave when the tick ends. */
function holdForTick(out: SseOut): void {
  if (out.frames !== undefined) return;
  out.frames = '';
  out.ascii = true;
  out.res.cork();
  process.nextTick(endOfTick, out);
}

/** `frames` written: as latin1 when they are all ASCII (the same bytes; see SseOut.ascii). */
function writeHeld(res: ServerResponse, frames: string, ascii: boolean): boolean {
  return ascii ? res.write(frames, 'latin1') : res.write(frames);
}

/** Writes the frames held and uncorks, at the end of the tick (a no-op after `endSse`, which does both itself). */
function endOfTick(out: SseOut): void {
  const { frames, res } = out;
  if (frames === undefined) return;
  out.frames = undefined;
  if (frames && !res.writableEnded && !res.destroyed) writeHeld(res, frames, out.ascii);
  res.uncork();
}

/** Frames joined up to this many characters are written at once (still corked): a stream's buffer is 16 KiB. */
const JOIN_LIMIT = 16 * 1024;

/**
 * Writes a frame (at the end of this tick, with the others of the tick, or at once when they reach `JOIN_LIMIT`).
 * `ascii`: the frame is known to be ASCII only (false when unknown). Returns a promise (resolved when the socket can
 * take more) only when the socket is full; callers await it only then, since awaiting the usual `undefined` costs a
 * microtask step per stream event.
 */
export function writeFrame(out: SseOut, frame: string, ascii = false): Promise<void> | void {
  const { res } = out;
  if (!frame || res.writableEnded || res.destroyed) return;
  holdForTick(out);
  const frames = out.frames + frame;
  if (!ascii) out.ascii = false;
  if (frames.length < JOIN_LIMIT) {
    out.frames = frames;
    if (!res.writableNeedDrain) return;
  } else {
    out.frames = '';
    const room = writeHeld(res, frames, out.ascii);
    out.ascii = true;
    if (room) return;
  }
  return new Promise((resolve) => {
    const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Ends a stream begun with `startSse`: this tick's frames and the end of the body in one write. */
export function endSse(out: SseOut): void {
  const { frames, res } = out;
  // The tick's scheduled endOfTick then finds nothing to do.
  out.frames = undefined;
  if (frames && !res.writableEnded && !res.destroyed) {
    if (out.ascii) res.end(frames, 'latin1');
    else res.end(frames);
  } else res.end();
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
