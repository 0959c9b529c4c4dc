/**
 * The Anthropic Messages format as clients speak it at /v1/messages <-> internal types. When the upstream is
 * Anthropic itself the adapter sends the client's body natively and its raw events are forwarded verbatim;
 * for every other upstream these mappings translate.
 */
import { randomHex } from '../ids.js';
import { badRequest } from '../errors.js';
import { sseData } from '../stream/sse.js';
import { PLAIN_ASCII, jsonIndex, jsonNumber, jsonString, literalOf, textKind } from './json-text.js';
import { GatewayUsage } from '../engine/chat.js';
import type { ChatRequest, ChatResult, ContentPart, FinishReason, Message, StreamEvent, ToolChoice, Usage } from '../engine/types.js';

type Block = Record<string, any>;

function imagePart(b: Block): ContentPart {
  const s = b.source ?? {};
  if (s.type === 'base64') return { type: 'image', url: `data:${s.media_type};base64,${s.data}` };
  if (s.type === 'url') return { type: 'image', url: String(s.url) };
  throw badRequest(`image source type "${s.type}" is not supported`, 'messages');
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  // Separate blocks stay separate words (a system-reminder block before the user's text must not glue onto it).
  if (Array.isArray(content)) return content.filter((b: Block) => b?.type === 'text').map((b: Block) => b.text).join('\n');
  return '';
}

/** One Anthropic message may become several internal ones: tool results are messages of their own. */
function mapMessage(m: Block, i: number): Message[] {
  if (typeof m.content === 'string') return [{ role: m.role, content: m.content }];
  if (!Array.isArray(m.content)) throw badRequest(`messages[${i}].content must be a string or an array of blocks`, 'messages');
  const out: Message[] = [];
  const parts: ContentPart[] = [];
  const toolCalls: NonNullable<Message['toolCalls']> = [];
  const thinking: NonNullable<Message['thinking']> = [];
  for (const b of m.content as Block[]) {
    switch (b.type) {
      case 'text': parts.push({ type: 'text', text: String(b.text ?? '') }); break;
      case 'image': parts.push(imagePart(b)); break;
      case 'tool_use': toolCalls.push({ id: b.id, name: b.name, arguments: JSON.stringify(b.input ?? {}) }); break;
      case 'tool_result':
        out.push({ role: 'tool', toolCallId: b.tool_use_id, content: textOf(b.content), ...(b.is_error ? { isError: true } : {}) });
        break;
      case 'thinking': thinking.push({ text: String(b.thinking ?? ''), signature: b.signature }); break;
      case 'redacted_thinking': thinking.push({ text: String(b.data ?? ''), redacted: true }); break;
      default: throw badRequest(`messages[${i}]: content block type "${b.type}" is not supported by the gateway`, 'messages');
    }
  }
  if (parts.length || toolCalls.length || thinking.length || !out.length) {
    const onlyText = parts.every((p) => p.type === 'text');
    const msg: Message = { role: m.role, content: parts.length ? (onlyText ? parts.map((p) => (p as { text: string }).text).join('\n') : parts) : m.role === 'assistant' ? null : '' };
    if (toolCalls.length) msg.toolCalls = toolCalls;
    if (thinking.length) msg.thinking = thinking;
    out.push(msg);
  }
  return out;
}

/** `beta`: the client's `anthropic-beta` header, kept for a native pass-through. */
export function parseMessagesRequest(body: Record<string, any>, beta?: string): ChatRequest {
  const messages: Message[] = [];
  if (body.system) messages.push({ role: 'system', content: typeof body.system === 'string' ? body.system : textOf(body.system) });
  (body.messages as Block[]).forEach((m, i) => messages.push(...mapMessage(m, i)));
  const req: ChatRequest = {
    model: body.model, messages, stream: body.stream === true, includeUsage: true, maxTokens: body.max_tokens,
    extra: {}, anthropicBody: body, ...(beta ? { anthropicBeta: beta } : {}),
  };
  if (typeof body.temperature === 'number') req.temperature = body.temperature;
  if (typeof body.top_p === 'number') req.topP = body.top_p;
  if (typeof body.top_k === 'number') req.topK = body.top_k;
  if (Array.isArray(body.stop_sequences)) req.stop = body.stop_sequences;
  if (body.metadata?.user_id) req.user = String(body.metadata.user_id);
  if (Array.isArray(body.tools)) {
    req.tools = body.tools.filter((t: Block) => t.input_schema || !t.type || t.type === 'custom')
      .map((t: Block) => ({ name: t.name, description: t.description, parameters: t.input_schema }));
  }
  const tc = body.tool_choice;
  if (tc) {
    const map: Record<string, ToolChoice> = { auto: 'auto', any: 'required', none: 'none' };
    req.toolChoice = tc.type === 'tool' ? { name: tc.name } : map[tc.type] ?? 'auto';
    if (tc.disable_parallel_tool_use) req.parallelToolCalls = false;
  }
  if (body.thinking?.type === 'enabled') req.thinking = { budgetTokens: Number(body.thinking.budget_tokens ?? 1024) };
  return req;
}

export function stopReason(f: FinishReason, stopSequence: string | null | undefined): string {
  if (f === 'length') return 'max_tokens';
  if (f === 'tool_calls') return 'tool_use';
  if (f === 'stop' && stopSequence) return 'stop_sequence';
  // Another upstream's content filter is what Anthropic calls a refusal.
  if (f === 'content_filter') return 'refusal';
  return 'end_turn';
}

export function anthropicUsage(u: Usage) {
  return {
    input_tokens: Math.max(0, u.promptTokens - u.cachedTokens - u.cacheWriteTokens),
    output_tokens: u.completionTokens,
    cache_creation_input_tokens: u.cacheWriteTokens,
    cache_read_input_tokens: u.cachedTokens,
  };
}

export function toAnthropicMessage(result: ChatResult, model: string): Record<string, unknown> {
  const c = result.choices[0];
  const content: Block[] = [];
  for (const t of c?.thinking ?? []) content.push(t.redacted ? { type: 'redacted_thinking', data: t.text } : { type: 'thinking', thinking: t.text, signature: t.signature ?? '' });
  if (c?.content) content.push({ type: 'text', text: c.content });
  for (const t of c?.toolCalls ?? []) content.push({ type: 'tool_use', id: t.id, name: t.name, input: safeJson(t.arguments) });
  return {
    id: result.id.startsWith('msg_') ? result.id : `msg_${result.id.replace(/^chatcmpl-/, '')}`,
    type: 'message', role: 'assistant', model, content,
    stop_reason: stopReason(c?.finishReason ?? 'stop', c?.stopSequence),
    stop_sequence: c?.finishReason === 'stop' ? c?.stopSequence ?? null : null,
    usage: anthropicUsage(result.usage!),
  };
}

/**
 * `JSON.stringify(m)`'s text for a message `toAnthropicMessage` made and the Messages handler then gave its `model` and,
 * last, its `gateway_usage` (a GatewayUsage), written from that known shape: text blocks only, the usage's four counts.
 * JSON.stringify walks such an object in V8's runtime (a short answer in a loop: 3.0–3.7 µs, against 0.9–1.2 for this;
 * a completion is written so too: completionJson, docs/PERFORMANCE.md, session 54). Anything else is undefined, and
 * the caller serialises the object; a native answer (the upstream's own message, whose fields are the upstream's) is
 * never passed here. The same text (test/unit/json-text.test.ts compares them).
 */
export function anthropicMessageJson(m: Record<string, unknown>): string | undefined {
  const { id, model, content, stop_reason: stop, stop_sequence: seq, usage, gateway_usage: g } = m;
  if (m.type !== 'message' || m.role !== 'assistant' || typeof id !== 'string' || typeof model !== 'string' || !Array.isArray(content)
    || typeof stop !== 'string' || (seq !== null && typeof seq !== 'string') || typeof usage !== 'object' || usage === null || !(g instanceof GatewayUsage)) {
    return undefined;
  }
  let blocks = '';
  for (const b of content as Block[]) {
    if (b.type !== 'text' || typeof b.text !== 'string') return undefined;
    blocks += `${blocks ? ',' : ''}{"type":"text","text":${jsonString(b.text)}}`;
  }
  const u = usage as Record<string, unknown>;
  const input = jsonNumber(u.input_tokens);
  const output = jsonNumber(u.output_tokens);
  const creation = jsonNumber(u.cache_creation_input_tokens);
  const read = jsonNumber(u.cache_read_input_tokens);
  if (input === undefined || output === undefined || creation === undefined || read === undefined) return undefined;
  return `{"id":${jsonString(id)},"type":"message","role":"assistant","model":${jsonString(model)},"content":[${blocks}],`
    + `"stop_reason":${jsonString(stop)},"stop_sequence":${seq === null ? 'null' : jsonString(seq)},"usage":{"input_tokens":${input},`
    + `"output_tokens":${output},"cache_creation_input_tokens":${creation},"cache_read_input_tokens":${read}},"gateway_usage":${g.json()}}`;
}

function safeJson(s: string): unknown {
  try { return s ? JSON.parse(s) : {}; } catch { return { _raw: s }; }
}

/**
 * Internal events -> Anthropic's event protocol. Raw Anthropic events (native upstream) are forwarded as they
 * came and the mapped ones ignored; otherwise blocks are opened and closed as the content kind changes.
 */
export class AnthropicEventWriter {
  private raw = false;
  private open: { kind: 'text' | 'thinking' | 'tool_use'; toolIndex?: number } | undefined;
  private blockIndex = -1;
  private finish: FinishReason = 'stop';
  private stopSequence: string | null = null;
  private usage: Usage | null = null;
  /** The frames of the last `write` are ASCII only (false when not known): src/engine/respond.ts. */
  ascii = false;

  constructor(private readonly model: string) {}

  /**
   * A text delta in the open text block: the bytes `ev('content_block_delta', …)` gives, without JSON.stringify's
   * call into V8's runtime (src/wire/json-text.ts), as the OpenAI writer's text deltas.
   */
  private textDelta(text: string): string {
    const kind = textKind(text);
    this.ascii = kind === PLAIN_ASCII;
    return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${jsonIndex(this.blockIndex)},"delta":{"type":"text_delta","text":${literalOf(text, kind)}}}\n\n`;
  }

  private ev(name: string, data: Record<string, unknown>): string {
    return sseData(JSON.stringify({ type: name, ...data }), name);
  }

  private startBlock(kind: 'text' | 'thinking' | 'tool_use', block: Block, toolIndex?: number): string {
    const close = this.closeBlock();
    this.blockIndex++;
    this.open = { kind, toolIndex };
    return close + this.ev('content_block_start', { index: this.blockIndex, content_block: block });
  }

  private closeBlock(): string {
    if (!this.open) return '';
    this.open = undefined;
    return this.ev('content_block_stop', { index: this.blockIndex });
  }

  write(e: StreamEvent): string {
    this.ascii = false; // a text delta says better
    if (e.type === 'anthropic_raw') {
      this.raw = true;
      // Forwarded as it came, except that the message names the catalog model (as a translated stream does).
      if (e.event === 'message_start' && e.data.message) {
        return sseData(JSON.stringify({ ...e.data, message: { ...(e.data.message as object), model: this.model } }), e.event);
      }
      return sseData(e.json ?? JSON.stringify(e.data), e.event);
    }
    if (this.raw) return '';
    switch (e.type) {
      case 'start':
        return this.ev('message_start', { message: { id: `msg_${randomHex(32)}`, type: 'message', role: 'assistant', model: this.model,
          content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } } }) + this.ev('ping', {});
      case 'text': {
        if (e.index !== 0) return '';
        if (this.open?.kind === 'text') return this.textDelta(e.text);
        return this.startBlock('text', { type: 'text', text: '' }) + this.ev('content_block_delta', { index: this.blockIndex, delta: { type: 'text_delta', text: e.text } });
      }
      case 'thinking': {
        if (e.index !== 0) return '';
        const pre = this.open?.kind === 'thinking' ? '' : this.startBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
        let out = pre + (e.text ? this.ev('content_block_delta', { index: this.blockIndex, delta: { type: 'thinking_delta', thinking: e.text } }) : '');
        if (e.signature) out += this.ev('content_block_delta', { index: this.blockIndex, delta: { type: 'signature_delta', signature: e.signature } });
        return out;
      }
      case 'tool_call_start':
        if (e.index !== 0) return '';
        return this.startBlock('tool_use', { type: 'tool_use', id: e.id, name: e.name, input: {} }, e.toolIndex);
      case 'tool_call_delta':
        if (e.index !== 0 || this.open?.kind !== 'tool_use') return '';
        return this.ev('content_block_delta', { index: this.blockIndex, delta: { type: 'input_json_delta', partial_json: e.arguments } });
      case 'finish':
        if (e.index === 0) { this.finish = e.finishReason; this.stopSequence = e.stopSequence ?? null; }
        return '';
      case 'usage':
        this.usage = e.usage;
        return '';
      case 'end':
        return '';
    }
  }

  /** The closing events of a translated stream (nothing for a forwarded native one: it carried its own). */
  end(usage: Usage): string {
    if (this.raw) return '';
    const u = anthropicUsage(this.usage ?? usage);
    return this.closeBlock()
      + this.ev('message_delta', { delta: { stop_reason: stopReason(this.finish, this.stopSequence), stop_sequence: this.finish === 'stop' ? this.stopSequence : null }, usage: u })
      + this.ev('message_stop', {});
  }

  static error(type: string, message: string): string {
    return sseData(JSON.stringify({ type: 'error', error: { type, message } }), 'error');
  }
}
