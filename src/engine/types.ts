/**
 * The internal chat model every wire format maps to and from. `/v1/chat/completions` and `/v1/messages` are
 * two serialisers over these types; provider adapters return them and never SSE strings.
 */

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export type ContentPart =
  | { type: 'text'; text: string }
  /** `url` is an http(s) URL or a `data:<mime>;base64,…` URL. */
  | { type: 'image'; url: string; detail?: 'auto' | 'low' | 'high' };

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text, as OpenAI carries it. */
  arguments: string;
}

export interface ThinkingBlock {
  text: string;
  signature?: string;
  redacted?: boolean;
}

export interface Message {
  role: Role;
  content: string | ContentPart[] | null;
  name?: string;
  /** assistant: calls it made. */
  toolCalls?: ToolCall[];
  /** tool: the call this answers. */
  toolCallId?: string;
  /** tool: the result reported an error (Anthropic `is_error`). */
  isError?: boolean;
  /** assistant: reasoning blocks to hand back to upstreams that want them (Anthropic). */
  thinking?: ThinkingBlock[];
}

export interface ToolDef {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  parameters?: Record<string, unknown>;
  strict?: boolean;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema?: Record<string, unknown>; strict?: boolean; description?: string };

export interface ChatRequest {
  /** The model as the client named it (before resolution). */
  model: string;
  messages: Message[];
  tools?: ToolDef[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
  temperature?: number;
  topP?: number;
  topK?: number;
  maxTokens?: number;
  n?: number;
  stop?: string[];
  seed?: number;
  logprobs?: boolean;
  topLogprobs?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  user?: string;
  stream: boolean;
  /** The client asked for a usage chunk (OpenAI `stream_options.include_usage`). */
  includeUsage: boolean;
  /** Extended thinking budget (Anthropic `thinking`); absent = off. */
  thinking?: { budgetTokens: number };
  metadata?: Record<string, string>;
  /** Body fields the internal model does not name: passed through to OpenAI-compatible upstreams only. */
  extra: Record<string, unknown>;
  /** The client's original Anthropic Messages body, for a native pass-through when the upstream is Anthropic. */
  anthropicBody?: Record<string, unknown>;
  /** The client's `anthropic-beta` header, sent along with a native pass-through (the body may rely on a beta). */
  anthropicBeta?: string;
}

/**
 * `req` with its stream flag set to `stream`: the request itself when the flag already is (adapters only read a request,
 * and a copy made with a spread is a new object on every call of the engine and the adapters: docs/PERFORMANCE.md,
 * session 39).
 */
export function withStream(req: ChatRequest, stream: boolean): ChatRequest {
  return req.stream === stream ? req : { ...req, stream };
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens read from the upstream's cache (priced at the cache-read rate where known). */
  cachedTokens: number;
  /** Prompt tokens written to the upstream's cache (Anthropic). */
  cacheWriteTokens: number;
  reasoningTokens: number;
}

export interface ChoiceResult {
  index: number;
  content: string | null;
  toolCalls?: ToolCall[];
  thinking?: ThinkingBlock[];
  refusal?: string | null;
  finishReason: FinishReason;
  /** The stop sequence that ended generation, when the upstream says which (Anthropic `stop_sequence`). */
  stopSequence?: string | null;
  logprobs?: unknown;
}

export interface ChatResult {
  id: string;
  /** The upstream's model id as it reported it. */
  model: string;
  created: number;
  choices: ChoiceResult[];
  /** null when the upstream reported none. */
  usage: Usage | null;
  systemFingerprint?: string | null;
  /** The upstream's raw Anthropic message, when the request went natively to Anthropic. */
  anthropicMessage?: Record<string, unknown>;
}

/**
 * Stream events. An adapter's stream ends with `end` when the upstream finished cleanly; a stream that stops
 * without it, or throws, is a broken stream (an UpstreamError of kind `stream_broken`).
 */
export type StreamEvent =
  | { type: 'start'; id: string; model: string }
  | { type: 'text'; index: number; text: string }
  | { type: 'thinking'; index: number; text: string; signature?: string }
  | { type: 'tool_call_start'; index: number; toolIndex: number; id: string; name: string }
  | { type: 'tool_call_delta'; index: number; toolIndex: number; arguments: string }
  | { type: 'finish'; index: number; finishReason: FinishReason; stopSequence?: string | null }
  | { type: 'usage'; usage: Usage }
  /**
   * A raw Anthropic event, when the request went natively to Anthropic (forwarded as-is on /v1/messages). `json`:
   * the event's data as the upstream wrote it, when it is one line (then forwarded without serialising `data` again).
   */
  | { type: 'anthropic_raw'; event: string; data: Record<string, unknown>; json?: string }
  | { type: 'end' };

/** The result every hand-written stream iterator ends with (src/engine/chat.ts, src/providers/openai/). */
export const STREAM_DONE: IteratorResult<StreamEvent> = Object.freeze({ done: true, value: undefined });

/**
 * A stream of events that can also be taken without a promise per event (src/providers/body-events.ts): what the
 * engine's `consume` reads when the upstream's iterator offers it. `next()` stays the way to the end and to failures.
 */
export interface PolledEvents {
  /** The next event when it is here (queued, or in what the body has read); undefined otherwise. */
  poll(): StreamEvent | undefined;
  /**
   * After `poll()` gave nothing: true when `next()` would wait for the upstream, and then `cb` is called once, from
   * the body's data callback, when something came (an event, the end or a failure); false when the end or a failure
   * is here already (`next()` tells it at once), and `cb` is not called.
   */
  wait(cb: () => void): boolean;
}

export function isPolledEvents(it: unknown): it is PolledEvents {
  return typeof (it as PolledEvents | undefined)?.poll === 'function' && typeof (it as PolledEvents).wait === 'function';
}

export type UpstreamErrorKind =
  | 'rate_limited' // 429
  | 'server_error' // 5xx
  | 'timeout' // connect, first byte or total timeout
  | 'connection' // refused, reset, DNS
  | 'auth' // upstream 401/403: the gateway's provider key is wrong — a configuration fault, not the client's
  | 'bad_request' // upstream 400/422: the client's request is unacceptable to the upstream
  | 'not_found' // upstream 404: the model is not served there
  | 'stream_broken' // the stream ended without its terminator or broke mid-way
  | 'invalid_response'; // unparseable body

/** Failures talking to an upstream. `retryable`: another attempt or candidate may succeed. */
export class UpstreamError extends Error {
  constructor(
    readonly kind: UpstreamErrorKind,
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }

  get retryable(): boolean {
    return ['rate_limited', 'server_error', 'timeout', 'connection', 'auth', 'not_found', 'invalid_response'].includes(this.kind);
  }
}

export const emptyUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });
