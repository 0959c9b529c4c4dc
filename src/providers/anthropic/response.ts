/** Anthropic Message -> internal ChatResult, and Anthropic's error types -> UpstreamError kinds. */
import { UpstreamError, type ChatResult, type FinishReason, type ThinkingBlock, type ToolCall, type Usage, type UpstreamErrorKind } from '../../engine/types.js';
import type { AMessage, AUsage } from './wire.js';

export function mapStopReason(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    // end_turn, stop_sequence, pause_turn (a server tool paused the turn: what came so far is complete) and
    // anything newer end the answer normally.
    default:
      return 'stop';
  }
}

/**
 * Anthropic's `input_tokens` EXCLUDES prompt tokens read from or written to the cache, so the prompt total is
 * the sum of the three.
 */
export function mapUsage(u: AUsage): Usage {
  const input = u.input_tokens ?? 0;
  const cacheRead = u.cache_read_input_tokens ?? 0;
  const cacheWrite = u.cache_creation_input_tokens ?? 0;
  return {
    promptTokens: input + cacheRead + cacheWrite,
    completionTokens: u.output_tokens ?? 0,
    cachedTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    reasoningTokens: 0,
  };
}

export function fromAnthropicMessage(msg: AMessage, native: boolean): ChatResult {
  if (!msg || typeof msg !== 'object' || !Array.isArray(msg.content)) throw new UpstreamError('invalid_response', 'Anthropic answered without a message');
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  const thinking: ThinkingBlock[] = [];
  for (const b of msg.content) {
    if (b.type === 'text') texts.push(String(b.text ?? ''));
    else if (b.type === 'tool_use') toolCalls.push({ id: String(b.id), name: String(b.name), arguments: JSON.stringify(b.input ?? {}) });
    else if (b.type === 'thinking') thinking.push({ text: String(b.thinking ?? ''), ...(b.signature ? { signature: String(b.signature) } : {}) });
    else if (b.type === 'redacted_thinking') thinking.push({ text: String(b.data ?? ''), redacted: true });
  }
  return {
    id: msg.id,
    model: msg.model,
    created: Math.floor(Date.now() / 1000),
    choices: [
      {
        index: 0,
        content: texts.length ? texts.join('') : null,
        ...(toolCalls.length ? { toolCalls } : {}),
        ...(thinking.length ? { thinking } : {}),
        finishReason: mapStopReason(msg.stop_reason),
        stopSequence: msg.stop_sequence ?? null,
      },
    ],
    usage: msg.usage ? mapUsage(msg.usage) : null,
    ...(native ? { anthropicMessage: msg as unknown as Record<string, unknown> } : {}),
  };
}

const ERROR_KINDS: Record<string, UpstreamErrorKind> = {
  overloaded_error: 'server_error',
  api_error: 'server_error',
  rate_limit_error: 'rate_limited',
  invalid_request_error: 'bad_request',
  request_too_large: 'bad_request',
  authentication_error: 'auth',
  permission_error: 'auth',
  billing_error: 'auth',
  not_found_error: 'not_found',
  timeout_error: 'timeout',
};

/** An `error` event inside a stream (`{type:'error', error:{type, message}}`). */
export function anthropicStreamError(data: Record<string, any>): UpstreamError {
  const type = String(data?.error?.type ?? 'api_error');
  const message = typeof data?.error?.message === 'string' ? data.error.message.slice(0, 300) : '';
  return new UpstreamError(ERROR_KINDS[type] ?? 'server_error', `Anthropic stream error ${type}${message ? `: ${message}` : ''}`);
}
