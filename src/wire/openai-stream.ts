/**
 * Internal results and stream events -> OpenAI's wire: the `chat.completion` object and the
 * `chat.completion.chunk` SSE stream (role in the first delta, tool-call deltas, a usage chunk with empty
 * choices when the client asked for it, then `data: [DONE]`; a failure mid-stream is a `data: {"error":…}`
 * event, which the OpenAI SDK raises).
 */
import type { ChatResult, StreamEvent, Usage } from '../engine/types.js';
import { sseData } from '../stream/sse.js';
import { PLAIN_ASCII, flat, jsonIndex, jsonNumber, jsonString, literalOf, textKind } from './json-text.js';
import { GatewayUsage } from '../engine/chat.js';

export function wireUsage(u: Usage) {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens },
    completion_tokens_details: { reasoning_tokens: u.reasoningTokens },
  };
}

export function toCompletion(result: ChatResult, model: string, gatewayUsage: unknown) {
  return {
    id: result.id.startsWith('chatcmpl-') ? result.id : `chatcmpl-${result.id}`,
    object: 'chat.completion' as const,
    created: result.created,
    model,
    choices: result.choices.map((c) => ({
      index: c.index,
      message: {
        role: 'assistant' as const,
        content: c.content ?? (c.toolCalls?.length ? null : ''),
        refusal: c.refusal ?? null,
        ...(c.toolCalls?.length ? { tool_calls: c.toolCalls.map((t) => ({ id: t.id, type: 'function' as const, function: { name: t.name, arguments: t.arguments } })) } : {}),
      },
      finish_reason: c.finishReason,
      logprobs: c.logprobs ?? null,
    })),
    usage: wireUsage(result.usage!),
    system_fingerprint: result.systemFingerprint ?? null,
    gateway_usage: gatewayUsage,
  };
}

type Completion = ReturnType<typeof toCompletion>;

/** A string or null as JSON.stringify writes it; undefined for anything else. */
const jsonStringOrNull = (v: unknown): string | undefined => (v === null ? 'null' : typeof v === 'string' ? jsonString(v) : undefined);

/**
 * JSON.stringify(c)'s text for the usual completion (choices with text content, no tool calls, no logprobs), written
 * from its known shape: JSON.stringify walks the object in V8's runtime (~29,000 instructions for a short answer by
 * `npm run bench:instructions`). Anything else, and any field not of the expected type, goes through JSON.stringify.
 * The keys in toCompletion's order; the same text (test/unit/json-text.test.ts compares them).
 */
export function completionJson(c: Completion): string {
  let choices = '';
  for (const ch of c.choices) {
    const m = ch.message as Completion['choices'][number]['message'] & { tool_calls?: unknown };
    const index = jsonNumber(ch.index);
    const content = typeof m.content === 'string' ? jsonString(m.content) : undefined;
    const refusal = jsonStringOrNull(m.refusal);
    const finish = jsonStringOrNull(ch.finish_reason);
    if (index === undefined || content === undefined || refusal === undefined || finish === undefined || m.tool_calls !== undefined || ch.logprobs !== null) {
      return JSON.stringify(c);
    }
    choices += `${choices ? ',' : ''}{"index":${index},"message":{"role":"assistant","content":${content},"refusal":${refusal}},"finish_reason":${finish},"logprobs":null}`;
  }
  const u = c.usage;
  const nums = [jsonNumber(c.created), jsonNumber(u.prompt_tokens), jsonNumber(u.completion_tokens), jsonNumber(u.total_tokens),
    jsonNumber(u.prompt_tokens_details.cached_tokens), jsonNumber(u.completion_tokens_details.reasoning_tokens)];
  const fingerprint = jsonStringOrNull(c.system_fingerprint);
  if (nums.includes(undefined) || fingerprint === undefined || c.gateway_usage === undefined || typeof c.id !== 'string' || typeof c.model !== 'string') return JSON.stringify(c);
  const [created, prompt, completion, total, cached, reasoning] = nums;
  const g = c.gateway_usage;
  return `{"id":${jsonString(c.id)},"object":"chat.completion","created":${created},"model":${jsonString(c.model)},"choices":[${choices}],`
    + `"usage":{"prompt_tokens":${prompt},"completion_tokens":${completion},"total_tokens":${total},"prompt_tokens_details":{"cached_tokens":${cached}},`
    + `"completion_tokens_details":{"reasoning_tokens":${reasoning}}},"system_fingerprint":${fingerprint},"gateway_usage":${g instanceof GatewayUsage ? g.json() : JSON.stringify(g)}}`;
}

/** What follows a text delta's literal to the end of its frame. */
const TEXT_TAIL = '},"finish_reason":null,"logprobs":null}]}\n\n';

/** Turns internal stream events into OpenAI SSE frames. */
export class OpenAIChunkWriter {
  private roleSent = new Set<number>();
  private usage: Usage | null = null;
  /** The serialised start of every chunk, up to the choice's index: text deltas are the bulk of a stream. Flat. */
  private readonly prefix: string;
  private readonly prefixAscii: boolean;
  /**
   * `prefix` through choice 0's `"content":`, flat as `prefix` is: choice 0's text frames (the bulk) are three pieces
   * (this, the text's literal, the tail) for V8 to copy when the tick's frames are written, not the ~15 of a prefix
   * made by a template and four more (session 39).
   */
  private readonly textHead0: string;
  /** The frames of the last `write` (or `end`) are ASCII only (false when not known): src/engine/respond.ts. */
  ascii = false;

  constructor(private readonly id: string, private readonly model: string, private readonly created: number, private readonly includeUsage: boolean) {
    // JSON.stringify's output without its three calls into V8's runtime (~1,400 instructions each): json-text.ts
    const createdText = Number.isSafeInteger(created) ? String(created) : JSON.stringify(created);
    const idKind = textKind(id);
    const modelKind = textKind(model);
    this.prefix = flat('data: {"id":', literalOf(id, idKind), ',"object":"chat.completion.chunk","created":', createdText, ',"model":', literalOf(model, modelKind), ',"choices":[{"index":');
    // ASCII when both literals are plain ASCII (the number and the rest are), told by the scans that made them and not
    // by a regular expression over the whole prefix; an escaped literal counts as not known (false: written as UTF-8)
    this.prefixAscii = idKind === PLAIN_ASCII && modelKind === PLAIN_ASCII;
    this.textHead0 = flat(this.prefix, '0,"delta":{"content":');
  }

  /** A text delta after the role went out: the same bytes as chunk(), with only the text serialised. */
  private text(index: number, text: string): string {
    const kind = textKind(text);
    this.ascii = this.prefixAscii && kind === PLAIN_ASCII;
    if (index === 0) return `${this.textHead0}${literalOf(text, kind)}${TEXT_TAIL}`;
    return `${this.prefix}${jsonIndex(index)},"delta":{"content":${literalOf(text, kind)}${TEXT_TAIL}`;
  }

  /** The role's frame (the stream's first): the same bytes as delta(0, { content: '' }), without a JSON.stringify. */
  private role(): string {
    this.roleSent.add(0);
    this.ascii = this.prefixAscii;
    return `${this.prefix}0,"delta":{"role":"assistant","content":""},"finish_reason":null,"logprobs":null}]}\n\n`;
  }

  /** A finish after the role went out: the same bytes as delta(index, {}, reason). */
  private finish(index: number, reason: string): string {
    const kind = textKind(reason);
    this.ascii = this.prefixAscii && kind === PLAIN_ASCII;
    return `${this.prefix}${jsonIndex(index)},"delta":{},"finish_reason":${literalOf(reason, kind)},"logprobs":null}]}\n\n`;
  }

  private chunk(choices: unknown[], extra: Record<string, unknown> = {}): string {
    return sseData(JSON.stringify({ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices, ...extra }));
  }

  private delta(index: number, delta: Record<string, unknown>, finish: string | null = null): string {
    if (!this.roleSent.has(index)) {
      this.roleSent.add(index);
      delta = { role: 'assistant', ...delta };
    }
    return this.chunk([{ index, delta, finish_reason: finish, logprobs: null }]);
  }

  /** Frames for one event ('' when it has none: start before content, raw events, usage held for the end). */
  write(ev: StreamEvent): string {
    this.ascii = false; // the cases that know better say so
    switch (ev.type) {
      case 'start':
        return this.roleSent.has(0) ? this.delta(0, { content: '' }) : this.role();
      case 'text':
        return this.roleSent.has(ev.index) ? this.text(ev.index, ev.text) : this.delta(ev.index, { content: ev.text });
      case 'thinking':
        return this.delta(ev.index, { reasoning_content: ev.text });
      case 'tool_call_start':
        return this.delta(ev.index, { tool_calls: [{ index: ev.toolIndex, id: ev.id, type: 'function', function: { name: ev.name, arguments: '' } }] });
      case 'tool_call_delta':
        return this.delta(ev.index, { tool_calls: [{ index: ev.toolIndex, function: { arguments: ev.arguments } }] });
      case 'finish':
        return this.roleSent.has(ev.index) && typeof ev.finishReason === 'string' ? this.finish(ev.index, ev.finishReason) : this.delta(ev.index, {}, ev.finishReason);
      case 'usage':
        this.usage = ev.usage;
        return '';
      case 'anthropic_raw':
      case 'end':
        return '';
    }
  }

  /** The closing frames: the usage chunk (when asked for) and [DONE]. */
  end(gatewayUsage: unknown): string {
    const usage = this.includeUsage && this.usage ? this.chunk([], { usage: wireUsage(this.usage), gateway_usage: gatewayUsage }) : '';
    this.ascii = usage === '';
    return usage + 'data: [DONE]\n\n';
  }

  static error(message: string, type: string, code: string | null, requestId?: string): string {
    return sseData(JSON.stringify({ error: { message, type, code, param: null, ...(requestId ? { request_id: requestId } : {}) } }));
  }
}
