/**
 * The Gemini (Generative Language API) wire format: generateContent, streamGenerateContent (`?alt=sse`: `data:`
 * lines framed with CRLF like the recorded traffic in shared/reference/gemini-recorded; without it a JSON array),
 * the model list, and Google's `{error:{code, message, status}}` bodies.
 */
import { behaviourOf, planReply, SIM_MODELS, type Reply, type SimChat } from './behaviour.js';
import { gate, pump, sendJson, sendMalformed, sendTruncated, type SimRequest, type StreamPieces, sendChatJson } from './io.js';

const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED', 499: 'CANCELLED', 500: 'INTERNAL', 501: 'UNIMPLEMENTED', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
};

export function geminiError(sr: SimRequest, code: number, message: string, headers: Record<string, string> = {}, details?: object[]): void {
  sendJson(sr.res, code, { error: { code, message, status: STATUS[code] ?? 'UNKNOWN', ...(details ? { details } : {}) } }, headers);
}

/** The key comes in `x-goog-api-key` or `?key=`; checked only when the simulator was started with an apiKey. */
export function geminiAuthorized(sr: SimRequest): boolean {
  const want = sr.state.apiKey;
  if (!want) return true;
  const got = sr.req.headers['x-goog-api-key'] ?? sr.url.searchParams.get('key');
  if (got === want) return true;
  if (!got) {
    geminiError(sr, 403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.");
  } else {
    geminiError(sr, 400, 'API key not valid. Please pass a valid API key.', {}, [
      { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } },
    ]);
  }
  return false;
}

export function geminiModels(sr: SimRequest): void {
  sendJson(sr.res, 200, {
    models: SIM_MODELS.map((id) => ({
      name: `models/${id}`,
      version: '001',
      displayName: `Simulator ${id.slice(4)}`,
      description: `Scripted simulator model ${id}`,
      inputTokenLimit: 1_048_576,
      outputTokenLimit: 65_536,
      supportedGenerationMethods: ['generateContent', 'countTokens'],
      temperature: 1,
      topP: 0.95,
      topK: 64,
      maxTemperature: 2,
    })),
  });
}

const partsOf = (c: any): any[] => (Array.isArray(c?.parts) ? c.parts : []);
const partsText = (c: any): string => partsOf(c).filter((p) => typeof p?.text === 'string' && !p.thought).map((p) => p.text).join('\n');

/** A functionResponse's text: its `result` / `output` / `content` string when it has one, else its JSON. */
function responseText(p: any): string {
  const r = p.functionResponse?.response;
  const s = r?.result ?? r?.output ?? r?.content;
  return typeof s === 'string' ? s : JSON.stringify(r ?? null);
}
const functionResponses = (c: any) => partsOf(c).filter((p) => p?.functionResponse);

function toSimChat(model: string, body: any): SimChat {
  const contents: any[] = body.contents;
  const isUser = (c: any) => (c?.role ?? 'user') === 'user';
  const lastUser = [...contents].reverse().find((c) => isUser(c) && partsOf(c).some((p) => typeof p?.text === 'string'));
  const last = contents[contents.length - 1];
  const gc = body.generationConfig ?? {};
  return {
    model,
    messageTexts: [
      ...(body.systemInstruction ? [partsText(body.systemInstruction)] : []),
      ...contents.map((c) => [partsText(c), ...functionResponses(c).map(responseText)].filter(Boolean).join('\n')),
    ],
    lastUserText: lastUser ? partsText(lastUser) : '',
    ...(functionResponses(last).length ? { toolResult: functionResponses(last).map(responseText).join('\n') } : {}),
    tools: (Array.isArray(body.tools) ? body.tools : [])
      .flatMap((t: any) => (Array.isArray(t?.functionDeclarations) ? t.functionDeclarations : []))
      .filter((d: any) => d?.name)
      .map((d: any) => ({ name: d.name, parameters: d.parameters ?? d.parametersJsonSchema })),
    stop: Array.isArray(gc.stopSequences) ? gc.stopSequences : [],
    maxTokens: gc.maxOutputTokens,
    thinking: gc.thinkingConfig?.includeThoughts === true,
  };
}

const FINISH = { stop: 'STOP', stop_sequence: 'STOP', length: 'MAX_TOKENS', tool: 'STOP' } as const;

/** promptTokenCount includes cachedContentTokenCount; thoughtsTokenCount is apart from candidatesTokenCount. */
function usageMetadata(reply: Reply) {
  const u = reply.usage;
  return {
    promptTokenCount: u.prompt,
    candidatesTokenCount: u.completion,
    totalTokenCount: u.prompt + u.completion + u.thinking,
    ...(u.cached ? { cachedContentTokenCount: u.cached } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: u.prompt }],
    ...(u.cached ? { cacheTokensDetails: [{ modality: 'TEXT', tokenCount: u.cached }] } : {}),
    ...(u.thinking ? { thoughtsTokenCount: u.thinking } : {}),
  };
}

function response(sr: SimRequest, model: string, parts: object[], reply: Reply, final: boolean) {
  return {
    candidates: [{ content: { parts, role: 'model' }, ...(final ? { finishReason: FINISH[reply.finish] } : {}), index: 0 }],
    // Like the recorded streams: partial chunks carry only the prompt count, the last one everything.
    usageMetadata: final ? usageMetadata(reply) : { promptTokenCount: reply.usage.prompt, totalTokenCount: reply.usage.prompt, promptTokensDetails: [{ modality: 'TEXT', tokenCount: reply.usage.prompt }] },
    modelVersion: model,
    responseId: `sim-${sr.seq}`,
  };
}

function allParts(reply: Reply): object[] {
  const parts: object[] = [];
  if (reply.thinking) parts.push({ text: reply.thinking.text, thought: true });
  if (reply.toolCall) parts.push({ functionCall: { name: reply.toolCall.name, args: reply.toolCall.args } });
  else parts.push({ text: reply.text });
  return parts;
}

function streamParts(reply: Reply): object[] {
  const parts: object[] = reply.thinking ? reply.thinking.chunks.map((text) => ({ text, thought: true })) : [];
  if (reply.toolCall) parts.push({ functionCall: { name: reply.toolCall.name, args: reply.toolCall.args } });
  else parts.push(...reply.chunks.map((text) => ({ text })));
  return parts;
}

function streamPieces(sr: SimRequest, model: string, reply: Reply, sse: boolean): StreamPieces {
  const parts = streamParts(reply);
  const objects = parts.map((p, i) => JSON.stringify(response(sr, model, [p], reply, i === parts.length - 1)));
  const textStart = parts.length - (reply.toolCall ? 1 : reply.chunks.length);
  const breakAfter = reply.streamBreak ? textStart + 3 : undefined;
  if (!sse) return { pieces: objects.map((o, i) => (i === 0 ? '[' : ',\r\n') + o).concat(']'), textStart, breakAfter };
  const pieces = objects.map((o) => `data: ${o}\r\n\r\n`);
  if (reply.malformed) pieces.unshift('data: {"candidates": [{"content": \r\n\r\n');
  if (reply.keepalive) return { pieces: pieces.flatMap((p, i) => (i === 0 ? [p] : [': PROCESSING\r\n\r\n', p])), textStart };
  return { pieces, textStart: reply.malformed ? textStart + 1 : textStart, breakAfter };
}

export async function geminiGenerate(sr: SimRequest, model: string, stream: boolean): Promise<void> {
  const body = sr.call.body;
  if (!body || !Array.isArray(body.contents) || !body.contents.length) {
    return geminiError(sr, 400, '* GenerateContentRequest.contents: contents is not specified\n');
  }
  if (!(await gate(sr, model, (s, m, h) => geminiError(sr, s, m, h)))) return;
  const reply = planReply(toSimChat(model, body), behaviourOf(model));
  if (stream) {
    const sse = sr.url.searchParams.get('alt') === 'sse';
    return pump(sr, sse ? 'text/event-stream' : 'application/json; charset=UTF-8', streamPieces(sr, model, reply, sse));
  }
  if (reply.malformed) return sendMalformed(sr.res);
  const out = response(sr, model, allParts(reply), reply, true);
  if (reply.streamBreak) return sendTruncated(sr.res, out);
  await sendChatJson(sr, out);
}
