/**
 * The OpenAI wire format: chat completions (JSON and `data:` chunk streams ending in `data: [DONE]`), the model
 * list, auth and error bodies. Images and audio are in ./openai-media.ts.
 */
import { behaviourOf, planReply, SIM_MODELS, splitEvery, type Reply, type SimChat } from './behaviour.js';
import { contentText, gate, nowSeconds, pump, sendJson, sendMalformed, sendTruncated, type SimRequest, type StreamPieces, type Piece, sendChatJson } from './io.js';

const FINGERPRINT = 'fp_simulator';
export const MODEL_CREATED = 1_700_000_000;

function errorType(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: 'invalid_request_error', code: 'invalid_api_key' };
  if (status === 403) return { type: 'invalid_request_error', code: 'unsupported_country_region_territory' };
  if (status === 404) return { type: 'invalid_request_error', code: 'model_not_found' };
  if (status === 429) return { type: 'requests', code: 'rate_limit_exceeded' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}

/** OpenAI's error body: `{error:{message, type, param, code}}`. */
export function openaiError(sr: SimRequest, status: number, message: string, headers: Record<string, string> = {}, param: string | null = null): void {
  sendJson(sr.res, status, { error: { message, ...errorType(status), param } }, headers);
}

/** `Authorization: Bearer <key>`, checked only when the simulator was started with an apiKey. */
export function openaiAuthorized(sr: SimRequest): boolean {
  const want = sr.state.apiKey;
  if (!want) return true;
  const got = String(sr.req.headers.authorization ?? '');
  if (got === `Bearer ${want}`) return true;
  if (!got) {
    openaiError(sr, 401, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).");
  } else {
    const key = got.replace(/^Bearer\s+/i, '');
    openaiError(sr, 401, `Incorrect API key provided: ${key.slice(0, 3)}***${key.slice(-4)}.`);
  }
  return false;
}

export function openaiModels(sr: SimRequest): void {
  sendJson(sr.res, 200, {
    object: 'list',
    data: SIM_MODELS.map((id) => ({ id, object: 'model', created: MODEL_CREATED, owned_by: 'simulator' })),
  });
}

function toSimChat(body: any): SimChat {
  const messages: any[] = body.messages;
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  const last = messages[messages.length - 1];
  const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : [];
  return {
    model: body.model,
    messageTexts: messages.map((m) => contentText(m?.content)),
    lastUserText: lastUser ? contentText(lastUser.content) : '',
    ...(last?.role === 'tool' ? { toolResult: contentText(last.content) } : {}),
    tools: (Array.isArray(body.tools) ? body.tools : [])
      .filter((t: any) => t?.type === 'function' && t.function?.name)
      .map((t: any) => ({ name: t.function.name, parameters: t.function.parameters })),
    stop,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    thinking: false,
  };
}

const FINISH = { stop: 'stop', stop_sequence: 'stop', length: 'length', tool: 'tool_calls' } as const;

export function openaiUsage(reply: Reply) {
  const u = reply.usage;
  return {
    prompt_tokens: u.prompt,
    completion_tokens: u.completion,
    total_tokens: u.prompt + u.completion,
    prompt_tokens_details: { cached_tokens: u.cached, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

function completion(sr: SimRequest, model: string, reply: Reply) {
  const message = reply.toolCall
    ? {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `call_sim_${sr.seq}`, type: 'function', function: { name: reply.toolCall.name, arguments: reply.toolCall.argsJson } }],
        refusal: null,
        annotations: [],
      }
    : { role: 'assistant', content: reply.text, refusal: null, annotations: [] };
  return {
    id: `chatcmpl-sim-${sr.seq}`,
    object: 'chat.completion',
    created: nowSeconds(),
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: FINISH[reply.finish] }],
    usage: openaiUsage(reply),
    service_tier: 'default',
    system_fingerprint: FINGERPRINT,
  };
}

/** The SSE pieces of a chat stream, and after how many of them `sim/stream-break` cuts the connection. */
function streamPieces(sr: SimRequest, model: string, reply: Reply, includeUsage: boolean): StreamPieces {
  const b = behaviourOf(model);
  // sim/chunks-N-padded-B: every chunk carries B characters of OpenAI's `obfuscation` padding (more bytes, same events)
  const pad = b.kind === 'chunks' && b.padBytes ? { obfuscation: 'p'.repeat(b.padBytes) } : {};
  const base = { id: `chatcmpl-sim-${sr.seq}`, object: 'chat.completion.chunk', created: nowSeconds(), model, service_tier: 'default', system_fingerprint: FINGERPRINT, ...pad };
  // Like OpenAI: with include_usage every chunk carries `usage: null` until the final usage chunk.
  const usageNull = includeUsage && !reply.usageWithChoices ? { usage: null } : {};
  // Each event is made and serialised when its turn to be written comes (a Piece), as a real server streams.
  const data = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
  const chunk = (delta: object, finish: string | null = null, extra: object = usageNull): Piece =>
    () => data({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra });

  const pieces: Piece[] = [];
  let breakAfter: number | undefined;
  let textStart = 1;
  if (reply.toolCall) {
    const callId = `call_sim_${sr.seq}`;
    pieces.push(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: reply.toolCall.name, arguments: '' } }], refusal: null }));
    for (const part of splitEvery(reply.toolCall.argsJson, 8)) pieces.push(chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] }));
  } else {
    pieces.push(chunk({ role: 'assistant', content: '', refusal: null }));
    if (reply.malformed) pieces.push(`data: {"id": "${base.id}", "choices": [{"delta": {"content": \n\n`);
    textStart = pieces.length;
    reply.chunks.forEach((text, i) => {
      const isLast = i === reply.chunks.length - 1;
      if (reply.usageWithChoices && isLast) pieces.push(chunk({ content: text }, FINISH[reply.finish], { usage: openaiUsage(reply) }));
      else pieces.push(chunk({ content: text }));
      if (reply.streamBreak && i === 2) breakAfter = pieces.length;
    });
  }
  if (!reply.usageWithChoices) pieces.push(chunk({}, FINISH[reply.finish]));
  if (includeUsage && !reply.usageWithChoices) pieces.push(() => data({ ...base, choices: [], usage: openaiUsage(reply) }));
  pieces.push('data: [DONE]\n\n');
  return { pieces: reply.keepalive ? interleaveKeepalive(pieces) : pieces, textStart, breakAfter };
}

/** `: PROCESSING` comment lines between events, as OpenRouter sends while a model thinks. */
export function interleaveKeepalive(pieces: Piece[]): Piece[] {
  return pieces.flatMap((p, i) => (i === 0 ? [p] : [': PROCESSING\n\n', p]));
}

export async function openaiChat(sr: SimRequest): Promise<void> {
  const body = sr.call.body;
  if (!body || typeof body !== 'object' || typeof body.model !== 'string') {
    return openaiError(sr, 400, 'you must provide a model parameter', {}, 'model');
  }
  if (!Array.isArray(body.messages) || !body.messages.length) {
    return openaiError(sr, 400, "Invalid 'messages': empty array. Expected an array with minimum length 1.", {}, 'messages');
  }
  if (!(await gate(sr, body.model, (s, m, h) => openaiError(sr, s, m, h)))) return;
  const b = behaviourOf(body.model);
  const reply = planReply(toSimChat(body), b);
  if (body.stream === true) {
    return pump(sr, 'text/event-stream; charset=utf-8', streamPieces(sr, body.model, reply, body.stream_options?.include_usage === true));
  }
  if (reply.malformed) return sendMalformed(sr.res);
  const out = completion(sr, body.model, reply);
  if (reply.streamBreak) return sendTruncated(sr.res, out);
  await sendChatJson(sr, out);
}
