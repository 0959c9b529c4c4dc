/** Internal ChatRequest -> Gemini generateContent request. */
import { UpstreamError, type ChatRequest, type ContentPart, type Message, type ToolChoice } from '../../engine/types.js';
import { GEMINI_SIGNATURE_PREFIX, parseDataUrl } from '../shared.js';
import { toGeminiSchema } from './schema.js';
import type { GContent, GGenerationConfig, GPart, GRequest } from './wire.js';

/**
 * Gemini 3 rejects a replayed function call without the thought signature it was issued with. When the
 * conversation does not carry one (an OpenAI client, or a turn another upstream produced), Google documents
 * this value as the way to skip that validation.
 */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

export function toGeminiRequest(req: ChatRequest): GRequest {
  const out: GRequest = { contents: toContents(req.messages) };
  const system = req.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content)).filter(Boolean);
  if (system.length) out.systemInstruction = { parts: system.map((text) => ({ text })) };
  if (req.tools?.length) {
    out.tools = [
      {
        functionDeclarations: req.tools.map((t) => {
          const params = t.parameters ? toGeminiSchema(t.parameters) : undefined;
          // An OBJECT schema without properties is rejected: a tool without arguments declares none.
          const hasParams = params && (params.type !== 'OBJECT' || params.properties);
          return { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), ...(hasParams ? { parameters: params } : {}) };
        }),
      },
    ];
    if (req.toolChoice !== undefined) out.toolConfig = { functionCallingConfig: toFunctionCalling(req.toolChoice) };
  }
  const config = generationConfig(req);
  if (Object.keys(config).length) out.generationConfig = config;
  return out;
}

export function toFunctionCalling(choice: ToolChoice): { mode: 'AUTO' | 'NONE' | 'ANY'; allowedFunctionNames?: string[] } {
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'required') return { mode: 'ANY' };
  if (typeof choice === 'object') return { mode: 'ANY', allowedFunctionNames: [choice.name] };
  return { mode: 'AUTO' };
}

function generationConfig(req: ChatRequest): GGenerationConfig {
  const c: GGenerationConfig = {};
  if (req.temperature !== undefined) c.temperature = req.temperature;
  if (req.topP !== undefined) c.topP = req.topP;
  if (req.topK !== undefined) c.topK = req.topK;
  if (req.maxTokens !== undefined) c.maxOutputTokens = req.maxTokens;
  if (req.stop?.length) c.stopSequences = req.stop;
  if (req.n !== undefined) c.candidateCount = req.n;
  if (req.seed !== undefined) c.seed = req.seed;
  if (req.presencePenalty !== undefined) c.presencePenalty = req.presencePenalty;
  if (req.frequencyPenalty !== undefined) c.frequencyPenalty = req.frequencyPenalty;
  const f = req.responseFormat;
  if (f?.type === 'json_object') c.responseMimeType = 'application/json';
  if (f?.type === 'json_schema') {
    c.responseMimeType = 'application/json';
    if (f.schema) c.responseSchema = toGeminiSchema(f.schema);
  }
  if (req.thinking) c.thinkingConfig = { thinkingBudget: req.thinking.budgetTokens, includeThoughts: true };
  return c;
}

function textOf(content: Message['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
}

/** Turns with roles user/model; consecutive same-role turns merge (parallel tool results form one turn). */
export function toContents(messages: Message[]): GContent[] {
  const callNames = new Map<string, string>();
  const out: GContent[] = [];
  for (const m of messages) {
    if (m.role === 'system' || m.role === 'developer') continue;
    let role: 'user' | 'model' = 'user';
    let parts: GPart[];
    if (m.role === 'assistant') {
      role = 'model';
      for (const c of m.toolCalls ?? []) callNames.set(c.id, c.name);
      parts = modelParts(m);
    } else if (m.role === 'tool') {
      parts = [functionResponse(m, callNames)];
    } else {
      parts = userParts(m.content);
    }
    if (!parts.length) continue;
    const last = out[out.length - 1];
    if (last && last.role === role) last.parts!.push(...parts);
    else out.push({ role, parts });
  }
  return out;
}

function userParts(content: Message['content']): GPart[] {
  if (content == null) return [];
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  return content.flatMap((p) => toPart(p));
}

function toPart(p: ContentPart): GPart[] {
  if (p.type === 'text') return p.text ? [{ text: p.text }] : [];
  const inline = parseDataUrl(p.url);
  if (inline) return [{ inlineData: { mimeType: inline.mimeType, data: inline.data } }];
  const mimeType = mimeFromUrl(p.url);
  return [{ fileData: { ...(mimeType ? { mimeType } : {}), fileUri: p.url } }];
}

const MIME_BY_EXT: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp',
  heic: 'image/heic', heif: 'image/heif', pdf: 'application/pdf',
};

function mimeFromUrl(url: string): string | undefined {
  const ext = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase();
  return ext ? MIME_BY_EXT[ext] : undefined;
}

function modelParts(m: Message): GPart[] {
  const parts = userParts(m.content);
  const signature = replaySignature(m);
  (m.toolCalls ?? []).forEach((c, i) => {
    const part: GPart = { functionCall: { name: c.name, args: parseArgs(c.arguments, c.name) } };
    // Only the first call of a step carries the signature (parallel calls share it).
    if (i === 0) part.thoughtSignature = signature;
    parts.push(part);
  });
  return parts;
}

/** The Gemini signature of this turn's function call (an empty thinking block), else any Gemini one, else the skip value. */
function replaySignature(m: Message): string {
  const mine = (m.thinking ?? []).filter((t) => t.signature?.startsWith(GEMINI_SIGNATURE_PREFIX));
  const sig = (mine.find((t) => !t.text) ?? mine[0])?.signature;
  return sig ? sig.slice(GEMINI_SIGNATURE_PREFIX.length) : SKIP_SIGNATURE;
}

function parseArgs(args: string, name: string): Record<string, unknown> {
  if (args.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(args);
  } catch {
    throw new UpstreamError('bad_request', `the arguments of the earlier call to tool "${name}" are not valid JSON`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new UpstreamError('bad_request', `the arguments of the earlier call to tool "${name}" are not a JSON object`);
  return v as Record<string, unknown>;
}

/**
 * A tool result. Gemini names the function (not a call id), so the name comes from the earlier call with this
 * id; `response` must be an object, so the text (parsed when it is JSON) goes under `result` or `error`.
 */
function functionResponse(m: Message, callNames: Map<string, string>): GPart {
  const name = (m.toolCallId !== undefined ? callNames.get(m.toolCallId) : undefined) ?? m.name;
  if (!name) throw new UpstreamError('bad_request', `tool result ${m.toolCallId ?? '(no id)'} answers no earlier tool call`);
  const text = textOf(m.content);
  let value: unknown = text;
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === 'object') value = parsed;
  } catch {
    // plain text result
  }
  return { functionResponse: { name, response: m.isError ? { error: value } : { result: value } } };
}
