/**
 * The OpenAI-compatible base: one adapter, configured per gateway by data (token-limit field name, parameters to
 * drop, extra headers). openai, openrouter, groq, together, … and `local` are instances of it (registry.ts).
 */
import { bodyChunks, send, readJson } from '../http.js';
import { readSse } from '../../stream/sse.js';
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
      return mapStream(readSse(bodyChunks(res.body)));
    },
  };
}

/** Upstream chunks -> internal events. Usage may ride on a chunk that still has choices; both are taken. */
export async function* mapStream(events: AsyncIterable<{ data: string }>): AsyncGenerator<StreamEvent> {
  let started = false;
  let done = false;
  const toolIds = new Map<string, string>();
  try {
    for await (const ev of events) {
      if (ev.data === '[DONE]') { done = true; break; }
      if (!ev.data) continue;
      let chunk: any;
      try {
        chunk = JSON.parse(ev.data);
      } catch {
        throw new UpstreamError('stream_broken', 'upstream sent malformed JSON in its stream');
      }
      if (chunk.error) throw new UpstreamError(chunk.error.code === 429 ? 'rate_limited' : 'server_error', `upstream stream error: ${String(chunk.error.message ?? '').slice(0, 300)}`);
      if (!started) {
        started = true;
        yield { type: 'start', id: String(chunk.id ?? ''), model: String(chunk.model ?? '') };
      }
      for (const c of chunk.choices ?? []) {
        const index = c.index ?? 0;
        const d = c.delta ?? {};
        if (typeof d.content === 'string' && d.content) yield { type: 'text', index, text: d.content };
        const reasoning = d.reasoning_content ?? d.reasoning;
        if (typeof reasoning === 'string' && reasoning) yield { type: 'thinking', index, text: reasoning };
        for (const t of d.tool_calls ?? []) {
          const toolIndex = t.index ?? 0;
          const key = `${index}:${toolIndex}`;
          if (t.id && !toolIds.has(key)) {
            toolIds.set(key, t.id);
            yield { type: 'tool_call_start', index, toolIndex, id: t.id, name: t.function?.name ?? '' };
          }
          if (t.function?.arguments) yield { type: 'tool_call_delta', index, toolIndex, arguments: t.function.arguments };
        }
        if (c.finish_reason) yield { type: 'finish', index, finishReason: finishReason(c.finish_reason) };
      }
      const usage = usageFrom(chunk.usage);
      if (usage) yield { type: 'usage', usage };
    }
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    throw new UpstreamError('stream_broken', `upstream stream broke: ${(err as Error).message ?? err}`);
  }
  if (!done) throw new UpstreamError('stream_broken', 'upstream closed the stream without [DONE]');
  yield { type: 'end' };
}
