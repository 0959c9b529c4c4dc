/** Gemini GenerateContentResponse -> internal ChatResult; Google error bodies -> UpstreamError. */
import { UpstreamError, type ChatResult, type ChoiceResult, type FinishReason, type ThinkingBlock, type ToolCall, type Usage, type UpstreamErrorKind } from '../../engine/types.js';
import { statusError, type UpstreamResponse } from '../http.js';
import { GEMINI_SIGNATURE_PREFIX, generatedId } from '../shared.js';
import type { GCandidate, GError, GPart, GResponse, GUsageMetadata } from './wire.js';

const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION']);

/**
 * STOP becomes tool_calls when the candidate called functions. OTHER, MALFORMED_FUNCTION_CALL, LANGUAGE and
 * reasons Google adds later have no closer internal meaning than `stop`.
 */
export function mapFinishReason(reason: string, hasToolCalls: boolean): FinishReason {
  if (reason === 'MAX_TOKENS') return 'length';
  if (FILTERED.has(reason)) return 'content_filter';
  return hasToolCalls ? 'tool_calls' : 'stop';
}

/**
 * Gemini's promptTokenCount includes cached tokens; tool-use prompt tokens (URL context, search) are billed as
 * input and thoughts as output, so the totals here add up to Google's totalTokenCount.
 */
export function mapUsage(u: GUsageMetadata): Usage {
  const thoughts = u.thoughtsTokenCount ?? 0;
  return {
    promptTokens: (u.promptTokenCount ?? 0) + (u.toolUsePromptTokenCount ?? 0),
    completionTokens: (u.candidatesTokenCount ?? 0) + thoughts,
    cachedTokens: u.cachedContentTokenCount ?? 0,
    cacheWriteTokens: 0,
    reasoningTokens: thoughts,
  };
}

/** What one part contributes. `callNo` numbers function calls across the response (ids `call_<n>`). */
export type MappedPart =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; text: string; signature?: string }
  | { kind: 'call'; call: ToolCall; signature?: string }
  | { kind: 'skip' };

export function mapPart(p: GPart, callNo: () => number): MappedPart {
  const signature = typeof p.thoughtSignature === 'string' && p.thoughtSignature ? GEMINI_SIGNATURE_PREFIX + p.thoughtSignature : undefined;
  if (p.functionCall && typeof p.functionCall.name === 'string') {
    const call = { id: `call_${callNo()}`, name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) };
    return { kind: 'call', call, ...(signature ? { signature } : {}) };
  }
  if (typeof p.text === 'string') {
    if (p.thought) return { kind: 'thinking', text: p.text, ...(signature ? { signature } : {}) };
    // A signature on answer text is an optional context aid; only function-call signatures are replayed.
    return { kind: 'text', text: p.text };
  }
  return { kind: 'skip' }; // inlineData (generated images), executableCode, codeExecutionResult, empty parts
}

function mapCandidate(c: GCandidate, i: number, callNo: () => number): ChoiceResult {
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  const thinking: ThinkingBlock[] = [];
  for (const p of c.content?.parts ?? []) {
    const m = mapPart(p, callNo);
    if (m.kind === 'text') texts.push(m.text);
    else if (m.kind === 'thinking') thinking.push({ text: m.text, ...(m.signature ? { signature: m.signature } : {}) });
    else if (m.kind === 'call') {
      toolCalls.push(m.call);
      if (m.signature) thinking.push({ text: '', signature: m.signature });
    }
  }
  return {
    index: c.index ?? i,
    content: texts.length ? texts.join('') : null,
    ...(toolCalls.length ? { toolCalls } : {}),
    ...(thinking.length ? { thinking } : {}),
    // A unary candidate with parts but no finishReason (seen on Vertex) finished normally.
    finishReason: mapFinishReason(c.finishReason ?? 'STOP', toolCalls.length > 0),
  };
}

export function fromGeminiResponse(res: GResponse, upstreamModel: string): ChatResult {
  // One literal, its choices set below (not `{ ...base, choices }`: a spread and a new key make a new map each call)
  const result: ChatResult = {
    id: res?.responseId ?? generatedId('gen-'),
    model: res?.modelVersion ?? upstreamModel,
    created: Math.floor(Date.now() / 1000),
    usage: res?.usageMetadata ? mapUsage(res.usageMetadata) : null,
    choices: [],
  };
  const candidates = Array.isArray(res?.candidates) ? res.candidates : [];
  if (!candidates.length) {
    // The prompt itself was blocked: no candidates, only feedback (a reason, or just a message).
    if (res?.promptFeedback && (res.promptFeedback.blockReason || res.promptFeedback.blockReasonMessage)) {
      result.choices = [{ index: 0, content: '', finishReason: 'content_filter' }];
      return result;
    }
    throw new UpstreamError('invalid_response', 'Gemini answered without candidates or prompt feedback');
  }
  for (const c of candidates) {
    if (!c.finishReason && !c.content?.parts?.length) throw new UpstreamError('invalid_response', 'Gemini answered a candidate without content or finish reason');
  }
  let n = 0;
  const callNo = () => n++;
  result.choices = candidates.map((c, i) => mapCandidate(c, i, callNo));
  return result;
}

const STATUS_KINDS: Record<string, UpstreamErrorKind> = {
  RESOURCE_EXHAUSTED: 'rate_limited',
  UNAVAILABLE: 'server_error',
  INTERNAL: 'server_error',
  UNKNOWN: 'server_error',
  CANCELLED: 'server_error',
  DATA_LOSS: 'server_error',
  DEADLINE_EXCEEDED: 'timeout',
  INVALID_ARGUMENT: 'bad_request',
  OUT_OF_RANGE: 'bad_request',
  PERMISSION_DENIED: 'auth',
  UNAUTHENTICATED: 'auth',
  // "User location is not supported", billing not enabled: the gateway's Google project cannot serve this,
  // a configuration fault another gateway may not have.
  FAILED_PRECONDITION: 'auth',
  NOT_FOUND: 'not_found',
};

/** Google's RetryInfo detail (`retryDelay: "39s"`), for a 429 without a Retry-After header. */
function retryDelayMs(e: GError): number | undefined {
  const d = e.details?.find((x) => String(x['@type'] ?? '').endsWith('google.rpc.RetryInfo'))?.retryDelay;
  const m = typeof d === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(d) : null;
  return m ? Math.round(Number(m[1]) * 1000) : undefined;
}

/** Google error `{code, message, status}` -> UpstreamError, for an HTTP error answer or an error inside a stream. */
export function geminiError(e: GError, status: number | undefined, base?: UpstreamError): UpstreamError {
  // An invalid key is INVALID_ARGUMENT (400) to Google, but it is the gateway's key that is wrong.
  const badKey = e.details?.some((d) => d.reason === 'API_KEY_INVALID');
  const kind = badKey ? 'auth' : (STATUS_KINDS[e.status ?? ''] ?? base?.kind ?? 'server_error');
  const message = badKey
    ? "upstream refused the gateway's provider credentials (API key not valid)"
    : (base?.message ?? `Gemini error ${e.status ?? e.code ?? ''}: ${String(e.message ?? '').slice(0, 300)}`);
  return new UpstreamError(kind, message, status ?? e.code, base?.retryAfterMs ?? retryDelayMs(e));
}

/** `send`'s error mapper: the HTTP status mapping, refined by the status name in Google's body when there is one. */
export function geminiHttpError(status: number, headers: UpstreamResponse['headers'], text: string): UpstreamError {
  const base = statusError(status, headers, text);
  let e: GError | undefined;
  try {
    e = JSON.parse(text)?.error;
  } catch {
    // not JSON (an HTML 404 page from a wrong base URL): the status says it all
  }
  return e && typeof e === 'object' ? geminiError(e, status, base) : base;
}
