/**
 * The OpenAI-compatible base: one adapter, configured per gateway by data (token-limit field name, parameters to
 * drop, extra headers). openai, openrouter, groq, together, … and `local` are instances of it (registry.ts).
 */
import { bodyChunks, send, readJson } from '../http.js';
import { SseParser } from '../../stream/sse.js';
import { fromOpenAIResponse, toOpenAIRequest, finishReason, usageFrom, type OpenAIWireOptions } from '../../wire/openai-chat.js';
import { UpstreamError, type ChatRequest, type StreamEvent } from '../../engine/types.js';
import type { ProviderAdapter, Target } from '../types.js';

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

export function openaiCompatible(opts: OpenAICompatibleOptions = {}): ProviderAdapter {
  const wire: OpenAIWireOptions = { maxTokensField: opts.maxTokensField ?? 'max_tokens', exclude: opts.exclude ?? [] };
  const body = (req: ChatRequest, target: Target) => JSON.stringify(toOpenAIRequest(req, target.upstreamModel, wire));

  return {
    async chat(req, target, signal) {
      const res = await send(`${target.baseUrl}/chat/completions`, {
        headers: headersFor(target, opts.headers, false), body: body({ ...req, stream: false }, target), signal, timeouts: target.timeouts,
      });
      const json = await readJson(res.body);
      if (json?.error) throw new UpstreamError('server_error', `upstream error: ${String(json.error.message ?? 'unknown').slice(0, 300)}`);
      try {
        return fromOpenAIResponse(json);
      } catch {
        throw new UpstreamError('invalid_response', 'upstream answered with something that is not a chat.completion');
      }
    },

    async chatStream(req, target, signal) {
      const res = await send(`${target.baseUrl}/chat/completions`, {
        headers: headersFor(target, opts.headers, true), body: body({ ...req, stream: true }, target), signal, timeouts: target.timeouts,
      });
      return openaiEvents(res.body);
    },
  };
}

/** One upstream chunk (an SSE event's data) -> internal events. Usage may ride on a chunk that still has choices. */
export class OpenAIStreamMapper {
  /** `[DONE]` arrived: the stream is complete. */
  done = false;
  private started = false;
  private readonly toolIds = new Map<string, string>();

  map(data: string): StreamEvent[] {
    if (data === '[DONE]') {
      this.done = true;
      return [];
    }
    if (!data) return [];
    let chunk: any;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new UpstreamError('stream_broken', 'upstream sent malformed JSON in its stream');
    }
    if (chunk.error) throw new UpstreamError(chunk.error.code === 429 ? 'rate_limited' : 'server_error', `upstream stream error: ${String(chunk.error.message ?? '').slice(0, 300)}`);
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

const broken = (err: unknown) =>
  (err instanceof UpstreamError ? err : new UpstreamError('stream_broken', `upstream stream broke: ${(err as Error).message ?? err}`));

/**
 * An upstream body -> internal events with one async step per network chunk: each chunk is parsed (SSE) and
 * mapped synchronously, instead of passing every event through an SSE generator and a mapping generator.
 */
export async function* openaiEvents(body: Parameters<typeof bodyChunks>[0]): AsyncGenerator<StreamEvent> {
  const parser = new SseParser();
  const mapper = new OpenAIStreamMapper();
  try {
    read: for await (const chunk of bodyChunks(body)) {
      for (const item of parser.push(chunk)) {
        if (typeof item === 'string') continue;
        const events = mapper.map(item.data);
        for (let i = 0; i < events.length; i++) yield events[i];
        if (mapper.done) break read;
      }
    }
    if (!mapper.done) {
      for (const item of parser.end()) if (typeof item !== 'string') yield* mapper.map(item.data);
    }
  } catch (err) {
    throw broken(err);
  }
  if (!mapper.done) throw new UpstreamError('stream_broken', 'upstream closed the stream without [DONE]');
  yield { type: 'end' };
}
