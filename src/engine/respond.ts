/**
 * Writing a stream to the client: SSE headers sent at once, each frame written as it is made (no buffering),
 * backpressure respected (a slow reader pauses the upstream instead of growing memory), and the upstream
 * aborted when the client leaves. Frames made in the same tick (the headers and the first frame; events that
 * arrived in one read from the upstream) leave in one write at the end of the tick, never later, so nothing waits
 * for a later event: the tick's frames are joined into one string written once (in the first tick the socket is
 * corked until then, so that the head leaves with them). (Written one by one, 24 frames were ~100 entries of one
 * `writev`: each `res.write` of a chunked response is four writes to the socket's buffer.)
 * A stream is ended with `endSse`, never `res.end()`: the tick's last frames and the end of the body leave in one
 * write (after a plain `res.end()` the frames still held for the tick would be dropped).
 *
 * A tick's frames are written to the response's socket directly, framed as a chunk of the chunked encoding by this
 * module (`size CRLF frames CRLF`, one string), whenever that is the same as what `res.write` would do: the socket is
 * this response's, nothing of the response waits in Node's own buffer, and the response is chunked. Node's
 * `res.write` makes the same chunk as four pieces (the size, a line end, the frames, a line end), and a socket write
 * of several pieces is a `writev` that reads each piece and its encoding back through V8's API (~11,600 instructions
 * a call); one string is one `write`, tried at once (docs/PERFORMANCE.md, session 33). Otherwise (a pipelined
 * response whose turn has not come, an HTTP/1.0 client without chunks) `res.write` does it.
 */
import { Buffer } from 'node:buffer';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { nextTick } from 'node:process';
import { Cancellation } from '../cancel.js';
import { STOP } from './chat.js';
import type { StreamEvent } from './types.js';

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
  /** The socket is corked until the end of the tick: the first tick's, so that the head leaves with its frames. */
  corked = false;
  /** The head was handed to Node to send (`startSse`): before that a chunk written straight would precede it. */
  headFlushed = false;

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
  out.corked = true;
  res.cork();
  holdForTick(out);
  res.flushHeaders();
  out.headFlushed = true;
  res.socket?.setNoDelay(true);
  return out;
}

/** Holds this tick's frames on `out` together (joined); they leave when the tick ends. */
function holdForTick(out: SseOut): void {
  if (out.frames !== undefined) return;
  out.frames = '';
  out.ascii = true;
  nextTick(endOfTick, out);
}

/**
 * The socket this chunked response's chunks can be written to directly, or undefined: Node's `_writeRaw` writes a
 * response's pieces to its socket when the socket is assigned to it (a ServerResponse has `socket` only then) and
 * writable, after what the response buffered itself (`writableLength` is that plus the socket's own; the head is
 * among it once flushed, until the socket is the response's).
 */
function directSocket(out: SseOut): Socket | undefined {
  const { res } = out;
  const socket = res.socket;
  return out.headFlushed && socket && socket.writable && res.chunkedEncoding && res.writableLength === socket.writableLength ? socket : undefined;
}

/**
 * Writes `frames` to `socket` as one chunk of the chunked encoding: its size in bytes (hex), a line end, the frames,
 * a line end; as latin1 when the frames are all ASCII. False when the socket's buffer is full.
 */
function writeChunk(socket: Socket, frames: string, ascii: boolean): boolean {
  return ascii
    ? socket.write(`${frames.length.toString(16)}\r\n${frames}\r\n`, 'latin1')
    : socket.write(`${Buffer.byteLength(frames).toString(16)}\r\n${frames}\r\n`);
}

/**
 * `frames` written (as one chunk straight to the socket when it can be, see `directSocket`): as latin1 when they are
 * all ASCII (the same bytes; see SseOut.ascii). False when the socket's buffer is full.
 */
function writeHeld(out: SseOut, frames: string, ascii: boolean): boolean {
  const { res } = out;
  const socket = directSocket(out);
  if (socket) return writeChunk(socket, frames, ascii);
  return ascii ? res.write(frames, 'latin1') : res.write(frames);
}

/** Writes the frames held (and uncorks the first tick), at the end of the tick (a no-op after `endSse`). */
function endOfTick(out: SseOut): void {
  const { frames, res } = out;
  if (frames === undefined) return;
  out.frames = undefined;
  if (frames && !res.writableEnded && !res.destroyed) writeHeld(out, frames, out.ascii);
  if (out.corked) {
    out.corked = false;
    res.uncork();
  }
}

/** The response waits for room: its own buffer (`res.write` said so) or its socket's (a direct write did). */
function needsDrain(res: ServerResponse): boolean {
  return res.writableNeedDrain || (res.socket?.writableNeedDrain ?? false);
}

/** Frames joined up to this many characters are written at once: a stream's buffer is 16 KiB. */
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
    if (!needsDrain(res)) return;
  } else {
    out.frames = '';
    const room = writeHeld(out, frames, out.ascii);
    out.ascii = true;
    if (room) return;
  }
  // A direct write's full socket drains on the socket (the response emits 'drain' only after a write of its own).
  const socket = res.writableNeedDrain ? undefined : res.socket;
  return new Promise((resolve) => {
    const done = () => { (socket ?? res).off('drain', done); res.off('close', done); resolve(); };
    (socket ?? res).on('drain', done);
    res.on('close', done);
  });
}

/** What writes a stream's events as frames (OpenAIChunkWriter, AnthropicEventWriter): `ascii` says what the last was. */
export interface FrameWriter {
  write(ev: StreamEvent): string;
  readonly ascii: boolean;
}

/**
 * A stream's consumer for EngineEvents.consume (`consume(FrameSink.prototype.event, sink)`): each event written as its
 * frame; STOP once the client left; a full socket waited for. A class with a prototype method rather than a closure
 * made per stream: V8 keeps a closure's optimised code only while one of them lives, and this one (with the frame
 * writing it inlines) was thrown away between streams and compiled again (docs/PERFORMANCE.md, session 38).
 */
export class FrameSink {
  /** Choice 0's text, when `keepReply` (a chat session's reply). */
  reply = '';

  constructor(private readonly out: SseOut, private readonly writer: FrameWriter, private readonly signal: AbortSignal, private readonly keepReply = false) {}

  event(ev: StreamEvent): unknown {
    if (this.keepReply && ev.type === 'text' && ev.index === 0) this.reply += ev.text;
    const full = writeFrame(this.out, this.writer.write(ev), this.writer.ascii);
    if (full) return full.then(() => (this.signal.aborted ? STOP : undefined));
    return this.signal.aborted ? STOP : undefined;
  }
}

/** Ends a stream begun with `startSse`: this tick's frames and the end of the body in one write. */
export function endSse(out: SseOut): void {
  const { frames, res } = out;
  // The tick's scheduled endOfTick then finds nothing to do.
  out.frames = undefined;
  if (frames && !res.writableEnded && !res.destroyed) {
    const socket = directSocket(out);
    if (socket) {
      // corked, so that the chunk and the end's terminator leave in one write (Node's end() uncorks the socket)
      socket.cork();
      writeChunk(socket, frames, out.ascii);
      res.end();
    } else if (out.ascii) res.end(frames, 'latin1');
    else res.end(frames);
  } else res.end();
  if (out.corked) {
    out.corked = false;
    res.uncork();
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
