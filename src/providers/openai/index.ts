/**
 * The OpenAI-compatible base: one adapter, configured per gateway by data (token-limit field name, parameters to
 * drop, extra headers). openai, openrouter, groq, together, … and `local` are instances of it (registry.ts).
 */
import { send, readCapped, upstreamJson, upstreamUrl, type UpstreamBody } from '../http.js';
import { SseParser } from '../../stream/sse.js';
import { fromOpenAIResponse, openAIRequestJson, toOpenAIRequest, finishReason, usageFrom, type OpenAIWireOptions } from '../../wire/openai-chat.js';
import { UpstreamError, withStream, type ChatRequest, type ChatResult, type StreamEvent } from '../../engine/types.js';
import { BodyEvents, streamFailure, type EventSource } from '../body-events.js';
import { LiteralTemplate } from '../literal-template.js';
import { MAX_LEARNS_PER_STREAM, shapesFor, wholeShapesFor, type ChunkShapes, type ShapeMatch } from '../chunk-shapes.js';
import type { ProviderAdapter, Target } from '../types.js';
import { jsonBody } from '../../json-body.js';

export interface OpenAICompatibleOptions extends Partial<OpenAIWireOptions> {
  headers?: Record<string, string>;
}

function headersFor(target: Target, extra: Record<string, string> | undefined, stream: boolean): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
    ...extra,
  };
}

/**
 * The same headers, made once per upstream key and kind (undici only reads them): one object less to build and
 * spread per call. Bounded like any per-key cache: the keys are the configured upstreams' own.
 */
function cachedHeaders(cache: Map<string, Record<string, string>>, target: Target, extra: Record<string, string> | undefined, stream: boolean): Record<string, string> {
  const key = target.apiKey ?? '';
  let h = cache.get(key);
  if (!h) {
    if (cache.size >= 64) cache.clear();
    h = Object.freeze(headersFor(target, extra, stream));
    cache.set(key, h);
  }
  return h;
}

export function openaiCompatible(opts: OpenAICompatibleOptions = {}): ProviderAdapter {
  const wire: OpenAIWireOptions = { maxTokensField: opts.maxTokensField ?? 'max_tokens', exclude: opts.exclude ?? [] };
  // the usual request's JSON written from its shape, else the object serialised (openAIRequestJson)
  const body = (req: ChatRequest, target: Target) => openAIRequestJson(req, target.upstreamModel, wire) ?? jsonBody(toOpenAIRequest(req, target.upstreamModel, wire));
  const jsonHeaders = new Map<string, Record<string, string>>();
  const streamHeaders = new Map<string, Record<string, string>>();

  return {
    async chat(req, target, signal) {
      const res = await send(upstreamUrl(target.baseUrl, '/chat/completions'), {
        headers: cachedHeaders(jsonHeaders, target, opts.headers, false), body: body(withStream(req, false), target), signal, timeouts: target.timeouts,
      });
      // read through the upstream model's answer shapes: no JSON.parse for an answer like one before it
      return wholeShapesFor(target.gateway.id, target.upstreamModel).readWhole(await readCapped(res.body), upstreamJson, reusableAnswer, answerOf);
    },

    async chatStream(req, target, signal) {
      const res = await send(upstreamUrl(target.baseUrl, '/chat/completions'), {
        headers: cachedHeaders(streamHeaders, target, opts.headers, true), body: body(withStream(req, true), target), signal, timeouts: target.timeouts,
      });
      return openaiEvents(res.body, signal, shapesFor(target.gateway.id, target.upstreamModel));
    },
  };
}

/** An upstream's answer (its JSON's object) as the gateway's result; an error body or another object is an UpstreamError. */
function answerOf(json: any): ChatResult {
  if (json?.error) throw new UpstreamError('server_error', `upstream error: ${String(json.error.message ?? 'unknown').slice(0, 300)}`);
  try {
    return fromOpenAIResponse(json);
  } catch {
    throw new UpstreamError('invalid_response', 'upstream answered with something that is not a chat.completion');
  }
}

/**
 * An answer whose shape may be kept (src/providers/chunk-shapes.ts): choices without tool calls, whose arguments and
 * ids differ every time (no later answer would fit), and without logprobs, an object fromOpenAIResponse hands on as it
 * is (a shape's objects are its own and rewritten by its next match).
 */
function reusableAnswer(j: any): boolean {
  if (!j || typeof j !== 'object' || !Array.isArray(j.choices)) return false;
  for (const c of j.choices) if (c?.logprobs != null || c?.message?.tool_calls != null) return false;
  return true;
}

/**
 * One upstream chunk (an SSE event's data) -> internal events. Usage may ride on a chunk that still has choices.
 *
 * Most chunks of a stream are text deltas that differ only in their text: OpenAI-compatible servers write each
 * chunk with the same id, created, model, fingerprint and field order. So once a text-only chunk was parsed, it is
 * kept as a template (src/providers/literal-template.ts), and a later chunk that is the template with another text
 * gives its one text event without a JSON parse (which was most of this mapper's time, ~5 % of the gateway's CPU
 * per stream). Anything else (another shape, a finish, usage, tools, a literal that is not one plain string) takes
 * the parse.
 */
export class OpenAIStreamMapper {
  /** `[DONE]` arrived: the stream is complete. */
  done = false;
  private started = false;
  private readonly toolIds = new Map<string, string>();
  private readonly template = new LiteralTemplate();
  /** The choice the template's text belongs to. */
  private textIndex = 0;

  /** Learning attempts left to this stream (src/providers/chunk-shapes.ts). */
  private learns = MAX_LEARNS_PER_STREAM;
  /** The shape this stream's last chunk fitted: its next chunk most likely fits that one or the next. */
  private readonly shapeAt = { at: 0 };

  /** `shapes`: the upstream model's chunk shapes, shared by its streams; without, every chunk not templated is parsed. */
  constructor(private readonly shapes?: ChunkShapes) {}

  map(data: string): StreamEvent[] {
    if (data === '[DONE]') {
      this.done = true;
      return [];
    }
    if (!data) return [];
    if (this.template.active) {
      const text = this.template.match(data);
      if (text !== undefined) return text ? [{ type: 'text', index: this.textIndex, text }] : [];
    }
    const { shapes } = this;
    const seen = shapes?.match(data, this.shapeAt);
    if (seen) return this.read(data, this.events(seen.chunk), seen);
    const chunk = this.parse(data);
    const out = this.events(chunk);
    // chunks with tool calls differ in their arguments: no shape would be met again
    const learned = shapes && this.learns > 0 && !out.some((e) => e.type === 'tool_call_start' || e.type === 'tool_call_delta')
      ? (this.learns--, shapes.learn(data, chunk)) : undefined;
    return this.read(data, out, learned);
  }

  /**
   * A chunk's events; one text alone starts the stream's text template: from a shape's match (`shaped`: read through
   * one, or just kept as one), at once (its text's literal is where the shape says); otherwise with the template's own
   * probe. A shape with two texts (two choices) starts none, and the template there stays, with its choice.
   */
  private read(data: string, out: StreamEvent[], shaped: ShapeMatch | undefined): StreamEvent[] {
    if (out.length === 1 && out[0].type === 'text' && this.template.canLearn) {
      const { index, text } = out[0];
      if (shaped) {
        if (shaped.textStart < 0) return out;
        this.template.adopt(data.slice(0, shaped.textStart - 1), data.slice(shaped.textEnd + 1));
      } else {
        this.template.learn(data, text, (probe, p) => {
          const choice = Array.isArray(probe?.choices) ? probe.choices.find((c: any) => (c?.index ?? 0) === index) : undefined;
          return choice?.delta?.content === p;
        });
      }
      this.textIndex = index;
    }
    return out;
  }

  private parse(data: string): any {
    let chunk: any;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new UpstreamError('stream_broken', 'upstream sent malformed JSON in its stream');
    }
    if (chunk.error) throw new UpstreamError(chunk.error.code === 429 ? 'rate_limited' : 'server_error', `upstream stream error: ${String(chunk.error.message ?? '').slice(0, 300)}`);
    return chunk;
  }

  /** The events of one chunk's object. */
  private events(chunk: any): StreamEvent[] {
    const out: StreamEvent[] = [];
    if (!this.started) {
      this.started = true;
      out.push({ type: 'start', id: String(chunk.id ?? ''), model: String(chunk.model ?? '') });
    }
    for (const c of chunk.choices ?? []) {
      const index = c.index ?? 0;
      const d = c.delta ?? {};
      if (typeof d.content === 'string' && d.content) out.push({ type: 'text', index, text: d.content });
      const reasoning = d.reasoning_content ?? d.reasoning;
      if (typeof reasoning === 'string' && reasoning) out.push({ type: 'thinking', index, text: reasoning });
      for (const t of d.tool_calls ?? []) {
        const toolIndex = t.index ?? 0;
        const key = `${index}:${toolIndex}`;
        if (t.id && !this.toolIds.has(key)) {
          this.toolIds.set(key, t.id);
          out.push({ type: 'tool_call_start', index, toolIndex, id: t.id, name: t.function?.name ?? '' });
        }
        if (t.function?.arguments) out.push({ type: 'tool_call_delta', index, toolIndex, arguments: t.function.arguments });
      }
      if (c.finish_reason) out.push({ type: 'finish', index, finishReason: finishReason(c.finish_reason) });
    }
    const usage = usageFrom(chunk.usage);
    if (usage) out.push({ type: 'usage', usage });
    return out;
  }
}

/**
 * An OpenAI stream body's pieces -> events (src/providers/body-events.ts reads the body): SSE, then each event's
 * data through the mapper; `[DONE]` is the terminator, after which `end` follows and nothing more is read; a body
 * that ends without it is broken.
 */
class OpenAISource implements EventSource {
  private readonly parser = new SseParser();
  private readonly mapper: OpenAIStreamMapper;

  constructor(shapes?: ChunkShapes) {
    this.mapper = new OpenAIStreamMapper(shapes);
  }

  get done(): boolean {
    return this.mapper.done;
  }

  take(chunk: Buffer | undefined, out: StreamEvent[]): void {
    for (const item of chunk ? this.parser.push(chunk) : this.parser.end()) {
      if (typeof item === 'string') continue;
      const events = this.mapper.map(item.data);
      for (let i = 0; i < events.length; i++) out.push(events[i]);
      if (this.mapper.done) {
        out.push({ type: 'end' });
        return;
      }
    }
    if (!chunk) throw new UpstreamError('stream_broken', 'upstream closed the stream without [DONE]');
  }
}

/**
 * The events of one OpenAI stream body; `signal` is the call's (its abort is reported as it is); `shapes`: the
 * upstream model's chunk shapes (`shapesFor`), kept from one of its streams to the next.
 */
export function openaiEvents(body: UpstreamBody, signal?: AbortSignal, shapes?: ChunkShapes): BodyEvents {
  return new BodyEvents(body, new OpenAISource(shapes), streamFailure('upstream', signal));
}
