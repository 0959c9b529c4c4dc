/** Gemini streamGenerateContent (alt=sse) -> internal StreamEvents. */
import { UpstreamError, type StreamEvent } from '../../engine/types.js';
import { SseParser } from '../../stream/sse.js';
import { BodyEvents, streamFailure, type EventSource } from '../body-events.js';
import type { UpstreamBody } from '../http.js';
import { generatedId, parseEventJson } from '../shared.js';
import { geminiError, mapFinishReason, mapPart, mapUsage } from './response.js';
import type { GResponse, GUsageMetadata } from './wire.js';

interface CandidateState {
  tools: number;
  finishReason?: string;
}

/**
 * Stateful mapping of one stream. Every SSE event is a whole GenerateContentResponse carrying the next slice
 * of each candidate. Vertex repeats `finishReason: STOP` on every chunk, so a finish reason is only known to be
 * final when the stream ends: the latest one per candidate is emitted then, with the latest usage.
 */
export class GeminiStreamMapper {
  private started = false;
  private calls = 0;
  private readonly candidates = new Map<number, CandidateState>();
  private blocked = false;
  private usage: GUsageMetadata | undefined;

  constructor(private readonly upstreamModel: string) {}

  map(chunk: GResponse & { error?: unknown }): StreamEvent[] {
    if (chunk.error && typeof chunk.error === 'object') throw geminiError(chunk.error, undefined);
    const out: StreamEvent[] = [];
    if (!this.started) {
      this.started = true;
      out.push({ type: 'start', id: chunk.responseId ?? generatedId('gen-'), model: chunk.modelVersion ?? this.upstreamModel });
    }
    const candidates = Array.isArray(chunk.candidates) ? chunk.candidates : [];
    candidates.forEach((c, i) => {
      const index = c.index ?? i;
      let state = this.candidates.get(index);
      if (!state) this.candidates.set(index, (state = { tools: 0 }));
      for (const p of c.content?.parts ?? []) out.push(...this.mapPart(p, index, state));
      if (c.finishReason) state.finishReason = c.finishReason;
    });
    const fb = chunk.promptFeedback;
    if (!candidates.length && fb && (fb.blockReason || fb.blockReasonMessage)) this.blocked = true;
    if (chunk.usageMetadata) this.usage = chunk.usageMetadata;
    return out;
  }

  private mapPart(p: Parameters<typeof mapPart>[0], index: number, state: CandidateState): StreamEvent[] {
    const m = mapPart(p, () => this.calls++);
    switch (m.kind) {
      case 'text':
        return m.text ? [{ type: 'text', index, text: m.text }] : [];
      case 'thinking':
        return m.text || m.signature ? [{ type: 'thinking', index, text: m.text, ...(m.signature ? { signature: m.signature } : {}) }] : [];
      case 'call': {
        const toolIndex = state.tools++;
        return [
          ...(m.signature ? [{ type: 'thinking' as const, index, text: '', signature: m.signature }] : []),
          { type: 'tool_call_start', index, toolIndex, id: m.call.id, name: m.call.name },
          { type: 'tool_call_delta', index, toolIndex, arguments: m.call.arguments },
        ];
      }
      case 'skip':
        return [];
    }
  }

  /** The HTTP stream ended: the closing events, or stream_broken when no candidate ever finished. */
  end(): StreamEvent[] {
    const finished = [...this.candidates.entries()].filter(([, s]) => s.finishReason).sort(([a], [b]) => a - b);
    const out: StreamEvent[] = finished.map(([index, s]) => ({ type: 'finish', index, finishReason: mapFinishReason(s.finishReason!, s.tools > 0) }));
    if (!out.length) {
      if (!this.blocked) throw new UpstreamError('stream_broken', 'Gemini stream ended without a finish reason');
      out.push({ type: 'finish', index: 0, finishReason: 'content_filter' });
    }
    if (this.usage) out.push({ type: 'usage', usage: mapUsage(this.usage) });
    out.push({ type: 'end' });
    return out;
  }
}

/**
 * A Gemini stream body's pieces -> events (src/providers/body-events.ts reads the body). Google appends a raw,
 * unframed JSON error body when a stream fails mid-way; the SSE parser reports such lines, and any of them fails
 * the stream with the error they carry (at the next event, or at the end). A last event missing only its blank
 * line still counts (recorded Google streams end so); whether the stream finished is then decided by the finish
 * reason, not by framing. The stream has no terminator: its end is the body's, where the mapper closes it.
 */
class GeminiSource implements EventSource {
  private readonly parser = new SseParser({ dispatchUnterminatedLast: true });
  private readonly mapper: GeminiStreamMapper;
  private readonly stray: string[] = [];
  done = false;

  constructor(upstreamModel: string) {
    this.mapper = new GeminiStreamMapper(upstreamModel);
  }

  take(chunk: Buffer | undefined, out: StreamEvent[]): void {
    for (const item of chunk ? this.parser.push(chunk) : this.parser.end()) {
      if (typeof item === 'string') {
        this.stray.push(item);
        continue;
      }
      if (this.stray.length) throw strayError(this.stray);
      if (!item.data) continue;
      const events = this.mapper.map(parseEventJson(item.data, 'Gemini'));
      for (let i = 0; i < events.length; i++) out.push(events[i]);
    }
    if (chunk) return;
    if (this.stray.length) throw strayError(this.stray);
    const closing = this.mapper.end();
    for (let i = 0; i < closing.length; i++) out.push(closing[i]);
    this.done = true;
  }
}

/** The events of one Gemini stream body; `signal` is the call's (its abort is reported as it is). */
export function geminiEvents(body: UpstreamBody, upstreamModel: string, signal?: AbortSignal): AsyncIterableIterator<StreamEvent> {
  return new BodyEvents(body, new GeminiSource(upstreamModel), streamFailure('Gemini', signal));
}

function strayError(lines: string[]): UpstreamError {
  try {
    const e = JSON.parse(lines.join('\n'))?.error;
    if (e && typeof e === 'object') return geminiError(e, undefined);
  } catch {
    // not a JSON error body
  }
  return new UpstreamError('invalid_response', 'Gemini stream carried lines that are not server-sent events');
}
