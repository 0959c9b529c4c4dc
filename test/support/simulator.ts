/**
 * The scripted upstream simulator (DESIGN.md convention 8): one real HTTP server on 127.0.0.1 that speaks the
 * OpenAI, Anthropic and Gemini wire formats. Tests, the benchmark and the demo point providers at it; nothing
 * touches the internet.
 *
 * Endpoints
 *   OpenAI (at /v1/… and at /…, so a base URL with or without /v1 works; `Authorization: Bearer`):
 *     POST chat/completions, GET models, POST images/generations, POST audio/transcriptions (multipart),
 *     POST audio/speech; GET /files/<name>.png serves the images behind generated URLs.
 *   Anthropic: POST /v1/messages, GET /v1/models when the request carries `anthropic-version`. A key and
 *     `anthropic-version` are always required, as upstream; the key in `x-api-key` or `Authorization: Bearer`
 *     (how the official SDK 1.x sends it).
 *   Gemini: POST /v1beta/models/{model}:generateContent and :streamGenerateContent (?alt=sse), also under /v1;
 *     GET /v1beta/models. Key in `x-goog-api-key` or `?key=`.
 *   Vertex AI (images): POST /v1/projects/{p}/locations/{l}/endpoints/{e}:predict and
 *     …/publishers/google/models/{m}:predict (see sim/vertex.ts); key as `Authorization: Bearer`.
 *   Keys are compared only when started with `apiKey`; a wrong key gets the format's 401 (Gemini: 400/403).
 *
 * The MODEL NAME picks the behaviour, identically in the three formats (`models/` is stripped):
 *   sim/echo (and any unknown model)  `Echo: <text of the last user message>`
 *   sim/slow-<N>ms       waits N ms before answering (streams: before the first byte)
 *   sim/error-<status>   that status (400–599) with the format's error body; 429 adds `Retry-After: 1`
 *   sim/flaky-<K>        500 on the first K calls of that model since reset(), then echoes
 *   sim/stream-break     3 text chunks `w1 ` `w2 ` `w3 `, then the socket is destroyed with no terminator
 *                        (non-stream: half of the announced JSON body, then the socket is destroyed)
 *   sim/tool-call        with tools: calls the FIRST tool with `{"query":"weather in Paris"}` — or, when its
 *                        schema requires a string property other than `query`, that property set to "test";
 *                        if the last message is a tool result: `Tool said: <result text>`; without tools: echo
 *   sim/chunks-<N>       N text chunks `w1 ` … `wN ` (non-stream: the joined text)
 *   sim/chunks-<N>-every-<M>ms  the same, each text chunk M ms after the piece before it, as a model writes;
 *                        the closing pieces follow the last text at once (non-stream: the joined text at once)
 *   sim/chunks-<N>-padded-<B>  the same as sim/chunks-<N>, each OpenAI chunk with B characters of `obfuscation`
 *                        padding (the same events in more bytes)
 *   sim/keepalive        streams interleave `: PROCESSING` comment lines between events
 *   sim/usage-with-choices  OpenAI streams: the last content chunk carries usage, finish_reason and a
 *                        non-empty choices array; no separate finish or usage chunk (even without include_usage)
 *   sim/cached           half the prompt tokens (rounded down) are cache reads
 *   sim/json             `{"ok":true,"echo":"<last user text>"}`
 *   sim/malformed        200 with invalid JSON (non-stream) / a `data:` line of invalid JSON (stream)
 *   sim/hang             never answers (until close())
 *   sim/reset            the connection is destroyed before any byte of an answer (connection reset)
 *   sim/truncated        streams: the first 3 pieces, then a clean end of the response without the terminator
 *                        (`[DONE]`, `message_stop`, the last Gemini chunk); non-stream: half the JSON body, then
 *                        a clean end (no Content-Length)
 *   sim/dribble-<N>ms    slow loris: the answer (JSON body or stream) is sent one byte every N ms
 *   sim/drip-<N>ms       streams: 5 text chunks `w1 ` … `w5 ` with N ms between pieces (non-stream: the joined
 *                        text at once)
 *   sim/stop-seq         `Hello STOP world` cut before the earliest given stop sequence found in it
 *                        (OpenAI finish `stop`; Anthropic `stop_sequence` + stop_sequence; Gemini `STOP`)
 *   sim/length           the echo reply cut to its first max_tokens words (1 when absent); finish
 *                        `length` / `max_tokens` / `MAX_TOKENS`
 *   Anthropic `thinking: {type:"enabled"}` and Gemini `thinkingConfig.includeThoughts` add a reasoning block
 *   `Thinking about: <last user text>` before the answer, with any model.
 *
 * The model list (GET models) names the fixed behaviours plus the benchmark's sim/chunks-20,
 * sim/chunks-20-every-10ms and sim/slow-4000ms;
 * any other parametric name works when asked for directly.
 *
 * Token counting (deterministic):
 *   prompt tokens     = sum over messages (system included) of ceil(characters / 4), where a message's text is
 *                       its text parts and tool-result texts joined with "\n" (images and tool-call arguments
 *                       do not count; characters are Unicode code points)
 *   completion tokens = whitespace-separated words of the reply text (min 1); for a tool call, of its
 *                       arguments JSON; reasoning words are counted apart
 *   OpenAI   prompt_tokens, completion_tokens; cached in prompt_tokens_details.cached_tokens (part of prompt)
 *   Anthropic input_tokens = prompt − cached, cache_read_input_tokens = cached,
 *            output_tokens = completion + reasoning words
 *   Gemini   promptTokenCount = prompt (cachedContentTokenCount part of it), candidatesTokenCount = completion,
 *            thoughtsTokenCount = reasoning words, totalTokenCount = all three
 *
 * Ids are predictable: the n-th call since reset() answers `chatcmpl-sim-n`, `msg_sim_n`, `call_sim_n`, ….
 */
import http from 'node:http';
import busboy from 'busboy';
import { normaliseModel } from './sim/behaviour.js';
import { queryObject, sendJson, type Format, type RecordedCall, type SimRequest, type SimState } from './sim/io.js';
import { openaiAuthorized, openaiChat, openaiError, openaiModels } from './sim/openai.js';
import { openaiImages, openaiSpeech, openaiTranscription, servePng } from './sim/openai-media.js';
import { anthropicAuthorized, anthropicError, anthropicMessages, anthropicModels } from './sim/anthropic.js';
import { geminiAuthorized, geminiError, geminiGenerate, geminiModels } from './sim/gemini.js';
import { VERTEX_PREDICT, vertexAuthorized, vertexModel, vertexPredict } from './sim/vertex.js';

export type { RecordedCall } from './sim/io.js';
export { SIM_MODELS } from './sim/behaviour.js';

export interface SimulatorOptions {
  /** When set, requests must carry this key (in each format's own header). */
  apiKey?: string;
  /** Default 0 (any free port). Always bound to 127.0.0.1. */
  port?: number;
  /**
   * Streams (all three formats): wait this many ms after the last piece (`[DONE]`, `message_stop`, …) before
   * ending the HTTP body. Default 0: the body ends right after the last piece, as before. On loopback the end of
   * the body otherwise arrives with the terminator, so a client that destroys the body at the terminator still
   * keeps its connection; with a delay it does not (test/e2e/upstream-reuse.test.ts).
   */
  streamEndDelayMs?: number;
  /**
   * Keep only the most recent this many calls in `calls` (a long-running simulator, e.g. the benchmark's upstream,
   * would otherwise hold every request it ever served, and its garbage collection grows with them). Default: all.
   */
  keepCalls?: number;
}

export interface Simulator {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  url: string;
  port: number;
  /** Every request received since start or reset(), in arrival order (with `keepCalls`, at least the most recent ones). */
  calls: RecordedCall[];
  /** Forgets the recorded calls and the flaky counters. */
  reset(): void;
  /** Stops listening and destroys every open connection (hanging and slow requests included). */
  close(): Promise<void>;
}

interface Route {
  format: Format;
  model?: (sr: SimRequest) => string | undefined;
  run: (sr: SimRequest) => void | Promise<void>;
  /** No key needed (generated image URLs are public, like OpenAI's signed blob URLs). */
  open?: boolean;
}

const bodyModel = (sr: SimRequest) => (typeof sr.call.body?.model === 'string' ? sr.call.body.model : undefined);
const OPENAI: Record<string, Route> = {
  'POST /chat/completions': { format: 'openai', model: bodyModel, run: openaiChat },
  'GET /models': { format: 'openai', run: openaiModels },
  'POST /images/generations': { format: 'openai', model: bodyModel, run: openaiImages },
  'POST /audio/transcriptions': {
    format: 'openai',
    model: (sr) => (typeof sr.call.fields?.model === 'string' ? sr.call.fields.model : undefined),
    run: openaiTranscription,
  },
  'POST /audio/speech': { format: 'openai', model: bodyModel, run: openaiSpeech },
};

function route(method: string, path: string, headers: http.IncomingHttpHeaders): Route | undefined {
  const g = path.match(/^\/(?:v1beta|v1)\/models\/(.+):(generateContent|streamGenerateContent)$/);
  if (g && method === 'POST') {
    const model = normaliseModel(decodeURIComponent(g[1]));
    return { format: 'gemini', model: () => model, run: (sr) => geminiGenerate(sr, model, g[2] === 'streamGenerateContent') };
  }
  if (path === '/v1beta/models' && method === 'GET') return { format: 'gemini', run: geminiModels };
  if (VERTEX_PREDICT.test(path) && method === 'POST') return { format: 'vertex', model: () => vertexModel(path), run: vertexPredict };
  if (path === '/v1/messages' && method === 'POST') return { format: 'anthropic', model: bodyModel, run: anthropicMessages };
  if (path === '/v1/models' && method === 'GET' && headers['anthropic-version']) return { format: 'anthropic', run: anthropicModels };
  if (/^\/files\/[\w.-]+\.png$/.test(path) && method === 'GET') return { format: 'openai', run: servePng, open: true };
  return OPENAI[`${method} ${path.replace(/^\/v1(?=\/)/, '')}`];
}

const AUTH: Record<Format, (sr: SimRequest) => boolean> = {
  openai: openaiAuthorized, anthropic: anthropicAuthorized, gemini: geminiAuthorized, vertex: vertexAuthorized,
};
const ERROR: Record<Format, (sr: SimRequest, status: number, message: string) => void> = {
  openai: openaiError, anthropic: anthropicError, gemini: geminiError, vertex: geminiError,
};

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

function parseMultipart(headers: http.IncomingHttpHeaders, raw: Buffer, call: RecordedCall, files: Map<string, Buffer>): Promise<void> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string | string[]> = {};
    call.fields = fields;
    call.files = [];
    const bb = busboy({ headers });
    bb.on('field', (name, value) => {
      const prev = fields[name];
      fields[name] = prev === undefined ? value : ([] as string[]).concat(prev, value);
    });
    bb.on('file', (field, stream, info) => {
      const parts: Buffer[] = [];
      stream.on('data', (d: Buffer) => parts.push(d));
      stream.on('end', () => {
        const data = Buffer.concat(parts);
        files.set(field, data);
        call.files!.push({ field, filename: info.filename ?? '', mimeType: info.mimeType, size: data.length });
      });
    });
    bb.on('close', () => resolve());
    bb.on('error', reject);
    bb.end(raw);
  });
}

async function handle(state: SimState, closing: AbortSignal, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const method = req.method ?? 'GET';
  const r = route(method, url.pathname, req.headers);
  const call: RecordedCall = {
    format: r?.format ?? 'unknown', method, path: url.pathname, query: queryObject(url), headers: req.headers, remotePort: req.socket.remotePort,
  };
  const raw = await readBody(req);
  const gone = new AbortController();
  res.on('close', () => gone.abort());
  const sr: SimRequest = { req, res, state, call, seq: 0, url, signal: AbortSignal.any([closing, gone.signal]) };

  const contentType = String(req.headers['content-type'] ?? '');
  let parseError: string | undefined;
  if (contentType.startsWith('multipart/form-data')) {
    sr.fileData = new Map();
    await parseMultipart(req.headers, raw, call, sr.fileData).catch((err: Error) => { parseError = `invalid multipart body: ${err.message}`; });
  } else if (raw.length) {
    try {
      call.body = JSON.parse(raw.toString('utf8'));
    } catch {
      parseError = 'request body is not valid JSON';
    }
  }
  call.model = r?.model?.(sr);
  if (call.model !== undefined) call.model = normaliseModel(call.model);
  state.calls.push(call);
  sr.seq = ++state.seq;
  // Trimmed in steps (one splice per `keepCalls` calls), keeping the array's identity: callers may hold it.
  if (state.keepCalls !== undefined && state.calls.length >= 2 * state.keepCalls) state.calls.splice(0, state.calls.length - state.keepCalls);

  if (!r) {
    const fmt: Format = url.pathname.startsWith('/v1beta') ? 'gemini' : 'openai';
    return ERROR[fmt](sr, 404, `no simulator route for ${method} ${url.pathname}`);
  }
  if (!r.open && !AUTH[r.format](sr)) return;
  if (parseError) return ERROR[r.format](sr, 400, parseError);
  await r.run(sr);
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const state: SimState = { apiKey: opts.apiKey, baseUrl: '', calls: [], seq: 0, keepCalls: opts.keepCalls, flaky: new Map(), streamEndDelayMs: opts.streamEndDelayMs };
  const closing = new AbortController();
  const server = http.createServer((req, res) => {
    handle(state, closing.signal, req, res).catch((err: Error) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: `simulator failure: ${err.message}` } });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  state.baseUrl = `http://127.0.0.1:${port}`;
  return {
    url: state.baseUrl,
    port,
    calls: state.calls,
    reset() {
      state.calls.length = 0; // keep the array identity: callers may hold `sim.calls`
      state.seq = 0;
      state.flaky.clear();
    },
    async close() {
      closing.abort();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
