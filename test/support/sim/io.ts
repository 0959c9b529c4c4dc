/**
 * Shared plumbing of the simulator: the per-server state, the request context every format handler gets, the
 * behaviour gate (hang / error / flaky / slow) and the low-level writers (JSON, raw bytes, streams that end
 * cleanly or break).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { behaviourOf, normaliseModel } from './behaviour.js';

export type Format = 'openai' | 'anthropic' | 'gemini' | 'vertex';

/** One request the simulator received, recorded before auth and behaviour so tests can inspect any of them. */
export interface RecordedCall {
  format: Format | 'unknown';
  method: string;
  /** Path without the query string, as sent (`/v1/chat/completions`, `/chat/completions`, …). */
  path: string;
  query: Record<string, string>;
  /** Lower-cased header names, as node parses them. */
  headers: IncomingHttpHeaders;
  /** Parsed JSON body; undefined for GET, multipart or unparseable bodies. */
  body?: any;
  /** Multipart text fields; a field sent more than once (`timestamp_granularities[]`) becomes an array. */
  fields?: Record<string, string | string[]>;
  /** Multipart files (metadata only). */
  files?: Array<{ field: string; filename: string; mimeType: string; size: number }>;
  /** The model asked for (body `model`, multipart `model`, or the Gemini path), `models/` stripped. */
  model?: string;
  /**
   * The client's port on the TCP connection the request came in on: calls with the same port came over the same
   * (kept-alive) connection, so tests can count the upstream connections a gateway opened.
   */
  remotePort?: number;
  /** Streams: the pieces written so far (each written once the one before was flushed to the socket). */
  piecesSent?: number;
}

export interface SimState {
  apiKey?: string;
  baseUrl: string;
  calls: RecordedCall[];
  /** Calls since start or reset(): a call's `seq` (its ids, e.g. `chatcmpl-sim-<seq>`). */
  seq: number;
  /** SimulatorOptions.keepCalls. */
  keepCalls?: number;
  /** Per model: calls seen since reset(), for `sim/flaky-K`. */
  flaky: Map<string, number>;
  /** Streams: ms between the last piece (the terminator) and the end of the HTTP body (SimulatorOptions). */
  streamEndDelayMs?: number;
}

export interface SimRequest {
  req: IncomingMessage;
  res: ServerResponse;
  state: SimState;
  call: RecordedCall;
  /** 1-based number of this call since reset(): makes ids (chatcmpl-sim-3, msg_sim_3) predictable. */
  seq: number;
  url: URL;
  /** Aborted when the client goes away or the simulator closes: stops delays and stream writes. */
  signal: AbortSignal;
  /** Multipart file contents, by field name. */
  fileData?: Map<string, Buffer>;
}

/** Writes an error in the caller's wire format. */
export type ErrorWriter = (status: number, message: string, headers?: Record<string, string>) => void;

/**
 * Applies the behaviours that decide whether and when an answer comes: `hang` never answers, `error-N` answers
 * N, `flaky-K` answers 500 for the first K calls of that model, `slow-Nms` waits. Returns false when the
 * request is already answered (or never will be).
 */
export async function gate(sr: SimRequest, model: string | undefined, writeError: ErrorWriter): Promise<boolean> {
  const b = behaviourOf(model);
  if (b.kind === 'hang') return false;
  if (b.kind === 'reset') {
    sr.res.socket?.destroy(); // the connection dies before any byte of an answer
    return false;
  }
  if (b.kind === 'error') {
    writeError(b.status, `simulated upstream error ${b.status}`, b.status === 429 ? { 'retry-after': '1' } : {});
    return false;
  }
  if (b.kind === 'flaky') {
    const key = normaliseModel(model);
    const seen = (sr.state.flaky.get(key) ?? 0) + 1;
    sr.state.flaky.set(key, seen);
    if (seen <= b.failures) {
      writeError(500, `simulated flaky failure ${seen} of ${b.failures}`);
      return false;
    }
  }
  if (b.kind === 'slow') {
    try {
      await sleep(b.ms, undefined, { signal: sr.signal });
    } catch {
      return false; // client gone or simulator closing
    }
  }
  return !sr.signal.aborted;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendRaw(res, status, 'application/json', JSON.stringify(body), headers);
}

export function sendRaw(res: ServerResponse, status: number, contentType: string, body: string | Buffer, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

/** A 200 JSON body that is not JSON (`sim/malformed`). */
export function sendMalformed(res: ServerResponse): void {
  sendRaw(res, 200, 'application/json', '{"id": "sim-malformed", "choices": [{"message": ');
}

/** Announces the whole body, sends half of it, then kills the connection (`sim/stream-break`, non-stream). */
export async function sendTruncated(res: ServerResponse, body: unknown): Promise<void> {
  const text = Buffer.from(JSON.stringify(body));
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(text.length) });
  await write(res, text.subarray(0, Math.floor(text.length / 2)));
  res.socket?.destroy();
}

function write(res: ServerResponse, piece: string | Buffer): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    res.write(piece, () => resolve());
  });
}

/**
 * One framed piece of a stream, or what frames it when its turn comes: a real server serialises each event as it
 * sends it, so a stream's first byte does not wait for the serialisation of the pieces after it (docs/PERFORMANCE.md,
 * session 20: building all 23 OpenAI chunks first, with `include_usage`, put ~45 µs before the first byte).
 */
export type Piece = string | (() => string);

/** A stream's framed pieces: where its text pieces begin (for paced streams), and where a break cuts it. */
export interface StreamPieces {
  pieces: Piece[];
  /** The index of the first text piece; the `n` pieces from there are the text (`sim/chunks-N-every-Mms`). */
  textStart: number;
  breakAfter?: number;
}

/**
 * Writes a stream piece by piece (each piece is already framed). Every write waits for its flush, so pieces
 * leave as separate writes and a `break` really comes after the last piece. `breakAfter`: destroy the socket
 * after that many pieces instead of ending the response (the terminator never arrives).
 */
export async function pump(
  sr: SimRequest,
  contentType: string,
  { pieces, textStart, breakAfter }: StreamPieces,
): Promise<void> {
  const { res } = sr;
  if (res.headersSent || res.destroyed) return;
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache', connection: 'keep-alive' });
  const b = behaviourOf(sr.call.model);
  // truncated: a clean end of the response after 3 pieces, without the stream's terminator
  const last = b.kind === 'truncated' ? Math.min(3, pieces.length) : (breakAfter ?? pieces.length);
  for (let i = 0; i < last; i++) {
    if (sr.signal.aborted) return;
    if (b.kind === 'drip' && i > 0 && !(await pause(b.ms, sr.signal))) return;
    // paced text: the pause comes before each of the n text pieces (the opening pieces, e.g. Anthropic's
    // message_start, content_block_start and ping, go at once; so does a first piece that is already text); the
    // closing pieces (finish, usage, terminator) follow the last text at once, as a model's stream ends
    if (b.kind === 'chunks' && b.everyMs && i > 0 && i >= textStart && i < textStart + b.n && !(await pause(b.everyMs, sr.signal))) return;
    const p = pieces[i];
    const piece = typeof p === 'string' ? p : p();
    if (b.kind === 'dribble') {
      if (!(await dribble(sr, Buffer.from(piece), b.ms))) return;
    } else await write(res, piece);
    sr.call.piecesSent = i + 1;
  }
  if (breakAfter !== undefined && b.kind !== 'truncated') res.socket?.destroy();
  else {
    // A real upstream's end of body may come a moment after its terminator; a client that stopped reading at the
    // terminator and destroyed the body has closed the connection by then (nothing left to end).
    const delay = sr.state.streamEndDelayMs ?? 0;
    if (delay > 0 && !(await pause(delay, sr.signal))) return;
    res.end();
  }
}

/** The answer of a non-streamed chat, with the byte-level behaviours (`dribble`, `truncated`) applied. */
export async function sendChatJson(sr: SimRequest, body: unknown): Promise<void> {
  const b = behaviourOf(sr.call.model);
  if (b.kind !== 'dribble' && b.kind !== 'truncated') return sendJson(sr.res, 200, body);
  const text = Buffer.from(JSON.stringify(body));
  // no Content-Length: the body ends when the response ends
  sr.res.writeHead(200, { 'content-type': 'application/json' });
  if (b.kind === 'truncated') {
    await write(sr.res, text.subarray(0, Math.floor(text.length / 2)));
    sr.res.end();
    return;
  }
  if (await dribble(sr, text, b.ms)) sr.res.end();
}

/** Slow loris: one byte every `ms`. False when the client went away first. */
async function dribble(sr: SimRequest, bytes: Buffer, ms: number): Promise<boolean> {
  for (let i = 0; i < bytes.length; i++) {
    if (i > 0 && !(await pause(ms, sr.signal))) return false;
    await write(sr.res, bytes.subarray(i, i + 1));
  }
  return true;
}

async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/** `key=value` pairs of the query string (last one wins). */
export function queryObject(url: URL): Record<string, string> {
  return Object.fromEntries(url.searchParams.entries());
}

/** The text of OpenAI / Anthropic content: a string, or the text parts of an array joined with a newline. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p): p is { type: 'text'; text: string } => p?.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text)
    .join('\n');
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
