/** Anthropic Messages SSE -> internal StreamEvents. */
import { UpstreamError, type StreamEvent, type Usage } from '../../engine/types.js';
import { SseParser } from '../../stream/sse.js';
import { BodyEvents, streamFailure, type EventSource } from '../body-events.js';
import { LiteralTemplate } from '../literal-template.js';
import type { UpstreamBody } from '../http.js';
import { parseEventJson } from '../shared.js';
import { spread } from '../../spread.js';
import { anthropicStreamError, mapStopReason, mapUsage } from './response.js';
import type { AUsage } from './wire.js';

/**
 * Stateful mapping of one stream's events. Content blocks are numbered across all types by Anthropic; the
 * internal `toolIndex` counts tool_use blocks only (OpenAI's `tool_calls[i].index`), so block indexes are
 * remembered per block.
 */
export class AnthropicStreamMapper {
  private readonly toolIndexOfBlock = new Map<number, number>();
  private tools = 0;
  private usage: AUsage = {};
  /** message_stop arrived: the stream is complete. */
  done = false;

  map(event: string | undefined, data: Record<string, any>): StreamEvent[] {
    const type = String(data.type ?? event ?? '');
    switch (type) {
      case 'message_start': {
        const m = data.message ?? {};
        this.usage = { ...(m.usage ?? {}) };
        return [{ type: 'start', id: String(m.id ?? ''), model: String(m.model ?? '') }];
      }
      case 'content_block_start':
        return this.blockStart(Number(data.index), data.content_block ?? {});
      case 'content_block_delta':
        return this.blockDelta(Number(data.index), data.delta ?? {});
      case 'message_delta': {
        // message_delta usage is cumulative; newer API versions repeat the input counts there too.
        this.usage = spread<AUsage>(this.usage, definedOnly(data.usage ?? {})); // (by assignment: src/spread.ts)
        const stop = data.delta?.stop_reason;
        const out: StreamEvent[] = [];
        if (stop !== undefined && stop !== null) {
          out.push({ type: 'finish', index: 0, finishReason: mapStopReason(stop), stopSequence: data.delta?.stop_sequence ?? null });
        }
        out.push({ type: 'usage', usage: this.currentUsage() });
        return out;
      }
      case 'message_stop':
        this.done = true;
        return [{ type: 'end' }];
      case 'error':
        throw anthropicStreamError(data);
      // ping, content_block_stop, and event types added later carry nothing to map.
      default:
        return [];
    }
  }

  currentUsage(): Usage {
    return mapUsage(this.usage);
  }

  private blockStart(index: number, block: Record<string, any>): StreamEvent[] {
    if (block.type === 'text') return block.text ? [{ type: 'text', index: 0, text: String(block.text) }] : [];
    if (block.type === 'tool_use') {
      const toolIndex = this.tools++;
      this.toolIndexOfBlock.set(index, toolIndex);
      return [{ type: 'tool_call_start', index: 0, toolIndex, id: String(block.id ?? ''), name: String(block.name ?? '') }];
    }
    if (block.type === 'thinking' && (block.thinking || block.signature)) {
      return [{ type: 'thinking', index: 0, text: String(block.thinking ?? ''), ...(block.signature ? { signature: String(block.signature) } : {}) }];
    }
    // redacted_thinking has no internal stream form (a native client still gets it through anthropic_raw).
    return [];
  }

  private blockDelta(index: number, delta: Record<string, any>): StreamEvent[] {
    switch (delta.type) {
      case 'text_delta':
        return delta.text ? [{ type: 'text', index: 0, text: String(delta.text) }] : [];
      case 'input_json_delta': {
        // Server tools (server_tool_use: web search, code execution) stream their input too; they are
        // Anthropic's to run, not the client's, so only tool_use blocks become tool calls.
        const toolIndex = this.toolIndexOfBlock.get(index);
        if (toolIndex === undefined || !delta.partial_json) return [];
        return [{ type: 'tool_call_delta', index: 0, toolIndex, arguments: String(delta.partial_json) }];
      }
      case 'thinking_delta':
        return delta.thinking ? [{ type: 'thinking', index: 0, text: String(delta.thinking) }] : [];
      case 'signature_delta':
        return [{ type: 'thinking', index: 0, text: '', signature: String(delta.signature ?? '') }];
      default:
        return [];
    }
  }
}

function definedOnly(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
}

/**
 * An Anthropic stream body's pieces -> events (src/providers/body-events.ts reads the body). With `native`, each
 * upstream event is first also handed on raw (`anthropic_raw`) so /v1/messages can forward it verbatim — except
 * `error`, which becomes the stream's UpstreamError (the one path every stream failure takes to the client).
 * `message_stop` is the terminator; a body that ends before it is broken. A `text_delta` shaped like one already
 * parsed gives its text without a JSON parse (src/providers/literal-template.ts): most of a stream's events.
 */
class AnthropicSource implements EventSource {
  private readonly parser = new SseParser();
  private readonly mapper = new AnthropicStreamMapper();
  private readonly template = new LiteralTemplate();
  /** The content block the template's text deltas belong to. */
  private textBlock = 0;

  constructor(private readonly native: boolean) {}

  get done(): boolean {
    return this.mapper.done;
  }

  take(chunk: Buffer | undefined, out: StreamEvent[]): void {
    for (const ev of chunk ? this.parser.push(chunk) : this.parser.end()) {
      if (typeof ev === 'string' || !ev.data) continue;
      if (ev.event === 'content_block_delta' && this.template.active) {
        const text = this.template.match(ev.data);
        if (text !== undefined) {
          if (this.native) out.push(raw(ev.event, { type: 'content_block_delta', index: this.textBlock, delta: { type: 'text_delta', text } }, ev.data));
          if (text) out.push({ type: 'text', index: 0, text });
          continue;
        }
      }
      const data = parseEventJson(ev.data, 'Anthropic');
      const name = ev.event ?? String(data.type ?? '');
      if (this.native && name !== 'error') out.push(raw(name, data, ev.data));
      const events = this.mapper.map(ev.event, data);
      for (let i = 0; i < events.length; i++) out.push(events[i]);
      if (this.mapper.done) return;
      const delta = data.delta;
      if (ev.event === 'content_block_delta' && data.type === 'content_block_delta' && delta?.type === 'text_delta' && typeof delta.text === 'string'
        && delta.text && this.template.canLearn) {
        const block = data.index;
        this.template.learn(ev.data, delta.text, (p, probe) => p?.type === 'content_block_delta' && p.index === block && p.delta?.type === 'text_delta' && p.delta.text === probe);
        this.textBlock = Number(block);
      }
    }
    if (!chunk) throw new UpstreamError('stream_broken', 'Anthropic stream ended before message_stop');
  }
}

/** A raw event, with the upstream's own bytes when they fit one `data:` line (forwarded as they came, not serialised again). */
function raw(event: string, data: Record<string, unknown>, line: string): StreamEvent {
  return line.includes('\n') ? { type: 'anthropic_raw', event, data } : { type: 'anthropic_raw', event, data, json: line };
}

/** The events of one Anthropic stream body; `signal` is the call's (its abort is reported as it is). */
export function anthropicEvents(body: UpstreamBody, native: boolean, signal?: AbortSignal): AsyncIterableIterator<StreamEvent> {
  return new BodyEvents(body, new AnthropicSource(native), streamFailure('Anthropic', signal));
}
