/** Anthropic Messages SSE -> internal StreamEvents. */
import { UpstreamError, type StreamEvent, type Usage } from '../../engine/types.js';
import { readSse } from '../../stream/sse.js';
import { parseEventJson } from '../shared.js';
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
        this.usage = { ...this.usage, ...definedOnly(data.usage ?? {}) };
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
 * The events of one Anthropic stream body. With `native`, each upstream event is first also yielded raw
 * (`anthropic_raw`) so /v1/messages can forward it verbatim — except `error`, which becomes the thrown
 * UpstreamError (the one path every stream failure takes to the client).
 */
export async function* anthropicEvents(body: AsyncIterable<Uint8Array | string>, native: boolean): AsyncGenerator<StreamEvent> {
  const mapper = new AnthropicStreamMapper();
  for await (const ev of readSse(body)) {
    if (!ev.data) continue;
    const data = parseEventJson(ev.data, 'Anthropic');
    const name = ev.event ?? String(data.type ?? '');
    if (native && name !== 'error') yield { type: 'anthropic_raw', event: name, data };
    yield* mapper.map(ev.event, data);
    if (mapper.done) return;
  }
  throw new UpstreamError('stream_broken', 'Anthropic stream ended before message_stop');
}
