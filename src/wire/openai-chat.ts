/**
 * OpenAI chat wire format <-> internal types. Used on both sides: the client's /v1/chat/completions body is
 * parsed here, and OpenAI-compatible upstreams are spoken to with the same mapping reversed.
 */
import { uuid4 } from '../ids.js';
import { badRequest } from '../errors.js';
import { spread } from '../spread.js';
import type { ChatRequest, ChatResult, ContentPart, FinishReason, Message, ResponseFormat, ToolChoice, ToolDef, Usage } from '../engine/types.js';
import { jsonNumber, jsonString } from './json-text.js';
import { PLAIN_MIN } from '../json-body.js';

/** Body fields the internal request names; anything else is `extra` (passed through to OpenAI-compatible upstreams). */
const KNOWN = new Set(['model', 'messages', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'temperature', 'top_p',
  'max_tokens', 'max_completion_tokens', 'n', 'stop', 'seed', 'logprobs', 'top_logprobs', 'frequency_penalty', 'presence_penalty',
  'user', 'stream', 'stream_options', 'metadata', 'top_k']);
/** Gateway-only fields: never sent upstream. */
export const GATEWAY_FIELDS = new Set(['provider', 'router_provider', 'router_virtual_key', 'auto_web_search']);

function parseContent(content: unknown, where: string): string | ContentPart[] | null {
  if (content === null || content === undefined) return null;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw badRequest(`${where}.content must be a string or an array of parts`, where);
  return content.map((p: any, i: number): ContentPart => {
    if (p?.type === 'text') return { type: 'text', text: String(p.text ?? '') };
    if (p?.type === 'image_url') return { type: 'image', url: String(p.image_url?.url ?? ''), ...(p.image_url?.detail ? { detail: p.image_url.detail } : {}) };
    throw badRequest(`${where}.content[${i}]: content part type "${p?.type}" is not supported by the gateway`, `${where}.content`);
  });
}

/** `v` when it is a number, else undefined. */
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

export function parseChatRequest(body: Record<string, any>): ChatRequest {
  const messages: Message[] = (body.messages as any[]).map((m, i) => {
    const where = `messages[${i}]`;
    const msg: Message = { role: m.role, content: parseContent(m.content, where) };
    if (m.name) msg.name = m.name;
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      msg.toolCalls = m.tool_calls.map((t: any) => ({ id: t.id, name: t.function?.name, arguments: t.function?.arguments ?? '' }));
    }
    if (m.role === 'tool') {
      if (!m.tool_call_id) throw badRequest(`${where}: a tool message needs tool_call_id`, where);
      msg.toolCallId = m.tool_call_id;
    }
    return msg;
  });
  const extra: Record<string, unknown> = {};
  for (const k of Object.keys(body)) if (!KNOWN.has(k) && !GATEWAY_FIELDS.has(k)) extra[k] = body[k];
  const stop = body.stop == null ? undefined : Array.isArray(body.stop) ? body.stop : [body.stop];
  const req: ChatRequest = {
    model: body.model,
    messages,
    stream: body.stream === true,
    includeUsage: body.stream_options?.include_usage === true,
    extra,
  };
  if (body.tools) req.tools = (body.tools as any[]).map((t): ToolDef => ({ name: t.function.name, description: t.function.description, parameters: t.function.parameters, strict: t.function.strict ?? undefined }));
  if (body.tool_choice != null) req.toolChoice = typeof body.tool_choice === 'string' ? body.tool_choice as ToolChoice : { name: body.tool_choice.function?.name };
  if (body.parallel_tool_calls != null) req.parallelToolCalls = body.parallel_tool_calls;
  if (body.response_format) {
    const rf = body.response_format;
    req.responseFormat = rf.type === 'json_schema'
      ? { type: 'json_schema', name: rf.json_schema?.name, schema: rf.json_schema?.schema, strict: rf.json_schema?.strict ?? undefined, description: rf.json_schema?.description }
      : { type: rf.type } as ResponseFormat;
  }
  // Each field read by name and set only when present, in the order the ChatRequest's keys have always come out in
  // (test/unit/engine-parts.test.ts pins it): reads by a key that varies (`body[k]`) and an object of them stripped
  // and assigned cost megamorphic loads and stores.
  const maxTokens = num(body.max_completion_tokens) ?? num(body.max_tokens);
  let v: number | undefined;
  if ((v = num(body.temperature)) !== undefined) req.temperature = v;
  if ((v = num(body.top_p)) !== undefined) req.topP = v;
  if ((v = num(body.top_k)) !== undefined) req.topK = v;
  if (maxTokens !== undefined) req.maxTokens = maxTokens;
  if ((v = num(body.n)) !== undefined) req.n = v;
  if (stop !== undefined) req.stop = stop;
  if ((v = num(body.seed)) !== undefined) req.seed = v;
  if (body.logprobs != null) req.logprobs = body.logprobs;
  if ((v = num(body.top_logprobs)) !== undefined) req.topLogprobs = v;
  if ((v = num(body.frequency_penalty)) !== undefined) req.frequencyPenalty = v;
  if ((v = num(body.presence_penalty)) !== undefined) req.presencePenalty = v;
  if (body.user != null) req.user = body.user;
  if (body.metadata != null) req.metadata = body.metadata;
  return req;
}

/** `o` without its undefined members (a new object: deleting keys would turn `o` into a slow dictionary). */
function strip<T extends Record<string, unknown>>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

// ---- internal -> OpenAI wire (requests to OpenAI-compatible upstreams) ----

function wireContent(c: Message['content']): unknown {
  if (c === null || typeof c === 'string') return c;
  return c.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image_url', image_url: { url: p.url, ...(p.detail ? { detail: p.detail } : {}) } }));
}

export function wireMessages(messages: Message[]): unknown[] {
  return messages.map((m) => {
    const out: Record<string, unknown> = { role: m.role, content: wireContent(m.content) };
    if (m.name) out.name = m.name;
    if (m.toolCalls?.length) out.tool_calls = m.toolCalls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } }));
    if (m.role === 'tool') out.tool_call_id = m.toolCallId;
    if (m.role === 'assistant' && out.content === undefined) out.content = null;
    return out;
  });
}

export interface OpenAIWireOptions {
  /** `max_tokens` (most compatible servers) or `max_completion_tokens` (OpenAI's current name). */
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /** Parameters this upstream rejects; dropped. */
  exclude: string[];
}

const booleanJson = (v: unknown): string | undefined => (typeof v === 'boolean' ? String(v) : undefined);
/** A string shorter than PLAIN_MIN as JSON (longer ones are jsonBody's: src/json-body.ts). */
const shortStringJson = (v: unknown): string | undefined => (typeof v === 'string' && v.length < PLAIN_MIN ? jsonString(v) : undefined);
/** `stop`: an array of short strings. */
function stopJson(v: unknown): string | undefined {
  if (!Array.isArray(v)) return undefined;
  let out = '';
  for (const s of v) {
    const text = shortStringJson(s);
    if (text === undefined) return undefined;
    out += out ? `,${text}` : text;
  }
  return `[${out}]`;
}

/**
 * The sampling fields an OpenAI-compatible request carries, in the order toOpenAIRequest writes them (those the request
 * leaves undefined are left out): the wire key (null: the upstream's token-limit field, `maxTokensField`), the value,
 * and how openAIRequestJson writes the usual kind of it (undefined: not the usual kind).
 */
const SAMPLING: ReadonlyArray<readonly [string | null, (r: ChatRequest) => unknown, (v: unknown) => string | undefined]> = [
  ['temperature', (r) => r.temperature, jsonNumber], ['top_p', (r) => r.topP, jsonNumber], [null, (r) => r.maxTokens, jsonNumber],
  ['n', (r) => r.n, jsonNumber], ['stop', (r) => r.stop, stopJson], ['seed', (r) => r.seed, jsonNumber],
  ['logprobs', (r) => r.logprobs, booleanJson], ['top_logprobs', (r) => r.topLogprobs, jsonNumber],
  ['frequency_penalty', (r) => r.frequencyPenalty, jsonNumber], ['presence_penalty', (r) => r.presencePenalty, jsonNumber],
  ['user', (r) => r.user, shortStringJson],
];

export function toOpenAIRequest(req: ChatRequest, model: string, opts: OpenAIWireOptions): Record<string, unknown> {
  // (built by assignment, not `{ ...req.extra, model, messages }`: src/spread.ts)
  const body = spread(req.extra);
  body.model = model;
  body.messages = wireMessages(req.messages);
  if (req.tools?.length) body.tools = req.tools.map((t) => ({ type: 'function', function: strip({ name: t.name, description: t.description, parameters: t.parameters, strict: t.strict }) }));
  if (req.toolChoice !== undefined) body.tool_choice = typeof req.toolChoice === 'string' ? req.toolChoice : { type: 'function', function: { name: req.toolChoice.name } };
  if (req.parallelToolCalls !== undefined && req.tools?.length) body.parallel_tool_calls = req.parallelToolCalls;
  if (req.responseFormat) {
    const rf = req.responseFormat;
    body.response_format = rf.type === 'json_schema' ? { type: 'json_schema', json_schema: strip({ name: rf.name, schema: rf.schema, strict: rf.strict, description: rf.description }) } : { type: rf.type };
  }
  for (const [key, value] of SAMPLING) {
    const v = value(req);
    if (v !== undefined) body[key ?? opts.maxTokensField] = v;
  }
  if (req.stream) {
    body.stream = true;
    // Always ask for usage so the gateway can bill a stream; the chunk is stripped if the client did not ask.
    const options = spread(req.extra.stream_options as object | undefined);
    options.include_usage = true;
    body.stream_options = options;
  }
  for (const k of opts.exclude) delete body[k];
  return body;
}

/**
 * `JSON.stringify(toOpenAIRequest(req, model, opts))`'s text for the usual request, written from its known shape:
 * no pass-through fields, no tools, tool choice or response format, nothing excluded, messages of a role and a string
 * (and a name), the sampling fields numbers, `stop` strings, `logprobs` a boolean and `user` a string, no string of
 * PLAIN_MIN characters or more (jsonBody writes those into the body's bytes: src/json-body.ts). Anything else is
 * undefined, and the caller serialises the object. JSON.stringify walks the object in V8's runtime: ~10,000
 * instructions for a one-message request in a loop, ~22,000 in the gateway by `npm run bench:instructions`. The
 * keys are toOpenAIRequest's, in its order; the text is the same (test/unit/openai-request-json.test.ts).
 */
export function openAIRequestJson(req: ChatRequest, model: string, opts: OpenAIWireOptions): string | undefined {
  for (const _ in req.extra) return undefined;
  if (req.tools?.length || req.toolChoice !== undefined || req.responseFormat || opts.exclude.length) return undefined;
  let messages = '';
  for (const m of req.messages) {
    const { role, content, name } = m;
    if (typeof role !== 'string' || typeof content !== 'string' || content.length >= PLAIN_MIN || m.toolCalls?.length || role === 'tool') return undefined;
    let named = '';
    if (name) {
      if (typeof name !== 'string') return undefined;
      named = `,"name":${jsonString(name)}`;
    }
    messages += `${messages ? ',' : ''}{"role":${jsonString(role)},"content":${jsonString(content)}${named}}`;
  }
  let tail = '';
  for (const [key, value, json] of SAMPLING) {
    const v = value(req);
    if (v === undefined) continue;
    const text = json(v);
    if (text === undefined) return undefined;
    tail += `,"${key ?? opts.maxTokensField}":${text}`;
  }
  if (req.stream) tail += ',"stream":true,"stream_options":{"include_usage":true}';
  return `{"model":${jsonString(model)},"messages":[${messages}]${tail}}`;
}

// ---- OpenAI wire -> internal (upstream answers) ----

const FINISH: Record<string, FinishReason> = { stop: 'stop', length: 'length', tool_calls: 'tool_calls', function_call: 'tool_calls', content_filter: 'content_filter' };
export const finishReason = (r: unknown): FinishReason => FINISH[String(r)] ?? 'stop';

export function usageFrom(u: any): Usage | null {
  if (!u || typeof u !== 'object') return null;
  return {
    promptTokens: Number(u.prompt_tokens ?? 0),
    completionTokens: Number(u.completion_tokens ?? 0),
    cachedTokens: Number(u.prompt_tokens_details?.cached_tokens ?? 0),
    cacheWriteTokens: 0,
    reasoningTokens: Number(u.completion_tokens_details?.reasoning_tokens ?? 0),
  };
}

export function fromOpenAIResponse(j: any): ChatResult {
  if (!j || !Array.isArray(j.choices)) throw new Error('not a chat.completion');
  return {
    id: String(j.id ?? `chatcmpl-${uuid4()}`),
    model: String(j.model ?? ''),
    created: Number(j.created ?? Math.floor(Date.now() / 1000)),
    choices: j.choices.map((c: any, i: number) => ({
      index: c.index ?? i,
      content: c.message?.content ?? null,
      toolCalls: c.message?.tool_calls?.map((t: any) => ({ id: t.id, name: t.function?.name, arguments: t.function?.arguments ?? '' })),
      refusal: c.message?.refusal ?? null,
      finishReason: finishReason(c.finish_reason),
      logprobs: c.logprobs ?? null,
    })),
    usage: usageFrom(j.usage),
    systemFingerprint: j.system_fingerprint ?? null,
  };
}
