/**
 * The Anthropic Messages wire format: `message` objects with text / tool_use / thinking blocks, the real
 * event sequence for streams (message_start, content_block_start, ping, content_block_delta, content_block_stop,
 * message_delta, message_stop, each with its `event:` line), the model list, and `{type:"error"}` bodies.
 */
import { behaviourOf, planReply, SIM_MODELS, splitEvery, type Reply, type SimChat } from './behaviour.js';
import { contentText, gate, pump, sendJson, sendMalformed, sendTruncated, type SimRequest, type StreamPieces, type Piece, sendChatJson } from './io.js';
import { interleaveKeepalive } from './openai.js';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large', 429: 'rate_limit_error', 529: 'overloaded_error',
};

export function anthropicError(sr: SimRequest, status: number, message: string, headers: Record<string, string> = {}): void {
  const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  const requestId = `req_sim_${sr.seq}`;
  sendJson(sr.res, status, { type: 'error', error: { type, message }, request_id: requestId }, { 'request-id': requestId, ...headers });
}

/**
 * A key and `anthropic-version` must be present (as the real API demands); the key must match if set. The key
 * comes in `x-api-key` or, as the official SDK (1.x) sends `apiKey`, in `Authorization: Bearer`.
 */
export function anthropicAuthorized(sr: SimRequest): boolean {
  const bearer = /^Bearer\s+(.+)$/i.exec(String(sr.req.headers.authorization ?? ''))?.[1];
  const key = sr.req.headers['x-api-key'] ?? bearer;
  if (!key) {
    anthropicError(sr, 401, 'x-api-key header is required');
    return false;
  }
  if (sr.state.apiKey && key !== sr.state.apiKey) {
    anthropicError(sr, 401, 'invalid x-api-key');
    return false;
  }
  if (!sr.req.headers['anthropic-version']) {
    anthropicError(sr, 400, 'anthropic-version: header is required');
    return false;
  }
  return true;
}

export function anthropicModels(sr: SimRequest): void {
  const data = SIM_MODELS.map((id) => ({ type: 'model', id, display_name: `Simulator ${id.slice(4)}`, created_at: '2025-01-01T00:00:00Z' }));
  sendJson(sr.res, 200, { data, has_more: false, first_id: data[0].id, last_id: data[data.length - 1].id });
}

const blocks = (content: unknown): any[] => (Array.isArray(content) ? content : []);

/** A tool_result block's text: its string content, or its text blocks. */
const toolResultText = (b: any): string => contentText(b?.content);

function toSimChat(body: any): SimChat {
  const messages: any[] = body.messages;
  const userText = (m: any) => (typeof m?.content === 'string' ? m.content : contentText(m?.content));
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user' && (typeof m.content === 'string' || blocks(m.content).some((b) => b?.type === 'text')));
  const last = messages[messages.length - 1];
  const lastResults = last?.role === 'user' ? blocks(last.content).filter((b) => b?.type === 'tool_result') : [];
  const system = body.system === undefined ? [] : [contentText(body.system)];
  return {
    model: body.model,
    messageTexts: [
      ...system,
      ...messages.map((m) => [userText(m), ...blocks(m?.content).filter((b) => b?.type === 'tool_result').map(toolResultText)].filter(Boolean).join('\n')),
    ],
    lastUserText: lastUser ? userText(lastUser) : '',
    ...(lastResults.length ? { toolResult: lastResults.map(toolResultText).join('\n') } : {}),
    tools: (Array.isArray(body.tools) ? body.tools : []).filter((t: any) => t?.name).map((t: any) => ({ name: t.name, parameters: t.input_schema })),
    stop: Array.isArray(body.stop_sequences) ? body.stop_sequences : [],
    maxTokens: body.max_tokens,
    thinking: body.thinking?.type === 'enabled' || body.thinking?.type === 'adaptive',
  };
}

const STOP_REASON = { stop: 'end_turn', stop_sequence: 'stop_sequence', length: 'max_tokens', tool: 'tool_use' } as const;

/** Anthropic's input_tokens exclude cache reads: prompt = input_tokens + cache_read_input_tokens. */
function usage(reply: Reply, output: number) {
  return {
    input_tokens: reply.usage.prompt - reply.usage.cached,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: reply.usage.cached,
    output_tokens: output,
    service_tier: 'standard',
  };
}

/** Thinking words are output tokens on Anthropic. */
const outputTokens = (reply: Reply) => reply.usage.completion + reply.usage.thinking;

function message(sr: SimRequest, model: string, reply: Reply) {
  const content: object[] = [];
  if (reply.thinking) content.push({ type: 'thinking', thinking: reply.thinking.text, signature: reply.thinking.signature });
  if (reply.toolCall) content.push({ type: 'tool_use', id: `toolu_sim_${sr.seq}`, name: reply.toolCall.name, input: reply.toolCall.args });
  else content.push({ type: 'text', text: reply.text });
  return {
    id: `msg_sim_${sr.seq}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: STOP_REASON[reply.finish],
    stop_sequence: reply.stopSequence,
    usage: usage(reply, outputTokens(reply)),
  };
}

function streamPieces(sr: SimRequest, model: string, reply: Reply): StreamPieces {
  // Each event is serialised when its turn to be written comes (a Piece), as a real server streams.
  const ev = (type: string, o: object): Piece => () => `event: ${type}\ndata: ${JSON.stringify({ type, ...o })}\n\n`;
  const pieces: Piece[] = [];
  let breakAfter: number | undefined;
  let textStart = 1;
  let index = 0;
  const block = (start: object, deltas: object[], onDelta?: (i: number) => void) => {
    pieces.push(ev('content_block_start', { index, content_block: start }));
    if (index === 0) pieces.push(ev('ping', {}));
    deltas.forEach((delta, i) => {
      pieces.push(ev('content_block_delta', { index, delta }));
      onDelta?.(i);
    });
    pieces.push(ev('content_block_stop', { index }));
    index++;
  };

  pieces.push(ev('message_start', {
    message: { id: `msg_sim_${sr.seq}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usage(reply, 1) },
  }));
  if (reply.malformed) pieces.push('event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {\n\n');
  if (reply.thinking) {
    const { chunks, signature } = reply.thinking;
    block({ type: 'thinking', thinking: '', signature: '' }, [
      ...chunks.map((thinking) => ({ type: 'thinking_delta', thinking })),
      { type: 'signature_delta', signature },
    ]);
  }
  if (reply.toolCall) {
    block(
      { type: 'tool_use', id: `toolu_sim_${sr.seq}`, name: reply.toolCall.name, input: {} },
      splitEvery(reply.toolCall.argsJson, 8).map((partial_json) => ({ type: 'input_json_delta', partial_json })),
    );
  } else {
    block({ type: 'text', text: '' }, reply.chunks.map((text) => ({ type: 'text_delta', text })), (i) => {
      if (i === 0) textStart = pieces.length - 1;
      if (reply.streamBreak && i === 2) breakAfter = pieces.length;
    });
  }
  pieces.push(ev('message_delta', { delta: { stop_reason: STOP_REASON[reply.finish], stop_sequence: reply.stopSequence }, usage: { output_tokens: outputTokens(reply) } }));
  pieces.push(ev('message_stop', {}));
  return { pieces: reply.keepalive ? interleaveKeepalive(pieces) : pieces, textStart, breakAfter };
}

function invalid(body: any): string | undefined {
  if (!body || typeof body !== 'object') return 'request body must be a JSON object';
  if (typeof body.model !== 'string') return 'model: Field required';
  if (!Number.isInteger(body.max_tokens)) return 'max_tokens: Field required';
  if (body.max_tokens < 1) return 'max_tokens: Input should be greater than or equal to 1';
  if (!Array.isArray(body.messages)) return 'messages: Field required';
  if (!body.messages.length) return 'messages: at least one message is required';
  return undefined;
}

export async function anthropicMessages(sr: SimRequest): Promise<void> {
  const body = sr.call.body;
  const problem = invalid(body);
  if (problem) return anthropicError(sr, 400, problem);
  if (!(await gate(sr, body.model, (s, m, h) => anthropicError(sr, s, m, h)))) return;
  const reply = planReply(toSimChat(body), behaviourOf(body.model));
  if (body.stream === true) {
    return pump(sr, 'text/event-stream; charset=utf-8', streamPieces(sr, body.model, reply));
  }
  if (reply.malformed) return sendMalformed(sr.res);
  const out = message(sr, body.model, reply);
  if (reply.streamBreak) return sendTruncated(sr.res, out);
  await sendChatJson(sr, out);
}
