/** Internal ChatRequest -> Anthropic Messages request (or the client's own Anthropic body, passed through). */
import { UpstreamError, type ChatRequest, type ContentPart, type Message, type ResponseFormat, type ToolChoice } from '../../engine/types.js';
import { GEMINI_SIGNATURE_PREFIX, parseDataUrl } from '../shared.js';
import { spread } from '../../spread.js';
import type { AMessageParam, ARequest, ARequestBlock, AToolChoice } from './wire.js';

/** Anthropic requires max_tokens; this is what a request that names none gets. */
export const DEFAULT_MAX_TOKENS = 4096;

/** Gateway-only body fields that Anthropic would reject as unknown. */
const GATEWAY_FIELDS = ['provider', 'router_provider', 'router_virtual_key', 'auto_web_search'];

/** The client's own Anthropic body, sent as-is so nothing is lost (cache_control, top_k, thinking, …). */
export function nativeBody(body: Record<string, unknown>, upstreamModel: string, stream: boolean): Record<string, unknown> {
  const out = spread(body); // (by assignment: src/spread.ts)
  out.model = upstreamModel;
  out.stream = stream;
  for (const f of GATEWAY_FIELDS) delete out[f];
  return out;
}

export function toAnthropicRequest(req: ChatRequest, upstreamModel: string, stream: boolean): ARequest {
  const system = systemBlocks(req);
  const out: ARequest = {
    model: upstreamModel,
    messages: toMessages(req.messages),
    max_tokens: req.maxTokens ?? defaultMaxTokens(req),
    stream,
  };
  if (system.length) out.system = system;
  if (req.tools?.length) {
    out.tools = req.tools.map((t) => ({
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      input_schema: t.parameters ?? { type: 'object', properties: {} },
    }));
    const choice = toToolChoice(req.toolChoice, req.parallelToolCalls);
    if (choice) out.tool_choice = choice;
  }
  if (req.stop?.length) out.stop_sequences = req.stop;
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.topP !== undefined) out.top_p = req.topP;
  if (req.topK !== undefined) out.top_k = req.topK;
  if (req.user !== undefined) out.metadata = { user_id: req.user };
  if (req.thinking) out.thinking = { type: 'enabled', budget_tokens: req.thinking.budgetTokens };
  return out;
}

/** max_tokens must exceed the thinking budget, so a large budget lifts the default above it. */
function defaultMaxTokens(req: ChatRequest): number {
  const budget = req.thinking?.budgetTokens ?? 0;
  return budget >= DEFAULT_MAX_TOKENS ? budget + DEFAULT_MAX_TOKENS : DEFAULT_MAX_TOKENS;
}

export function toToolChoice(choice: ToolChoice | undefined, parallel: boolean | undefined): AToolChoice | undefined {
  const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any', ...noParallel };
  if (typeof choice === 'object') return { type: 'tool', name: choice.name, ...noParallel };
  if (choice === 'auto' || parallel === false) return { type: 'auto', ...noParallel };
  return undefined;
}

/**
 * Anthropic has no JSON mode: a requested JSON response becomes a system instruction (the model follows it
 * well, but nothing enforces it upstream).
 */
export function jsonInstruction(format: ResponseFormat | undefined): string | undefined {
  if (!format || format.type === 'text') return undefined;
  const base = 'Respond with one valid JSON value and nothing else: no prose before or after it, no Markdown code fences.';
  if (format.type === 'json_object') return `${base} The value must be a JSON object.`;
  const schema = format.schema ? ` It must conform to this JSON Schema (named "${format.name}"): ${JSON.stringify(format.schema)}` : '';
  return `${base}${schema}`;
}

function systemBlocks(req: ChatRequest): Array<{ type: 'text'; text: string }> {
  const texts = req.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content));
  const json = jsonInstruction(req.responseFormat);
  if (json) texts.push(json);
  return texts.filter((t) => t.length > 0).map((text) => ({ type: 'text', text }));
}

export function textOf(content: Message['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
}

/** Conversation turns: system/developer go to `system`; consecutive same-role turns merge (Anthropic alternates). */
export function toMessages(messages: Message[]): AMessageParam[] {
  const out: AMessageParam[] = [];
  for (const m of messages) {
    if (m.role === 'system' || m.role === 'developer') continue;
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const blocks = m.role === 'assistant' ? assistantBlocks(m) : m.role === 'tool' ? [toolResult(m)] : partsToBlocks(m.content);
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  }
  return out;
}

function partsToBlocks(content: Message['content']): ARequestBlock[] {
  if (content == null) return [];
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  return content.flatMap((p): ARequestBlock[] => partToBlock(p));
}

function partToBlock(p: ContentPart): ARequestBlock[] {
  if (p.type === 'text') return p.text ? [{ type: 'text', text: p.text }] : [];
  const inline = parseDataUrl(p.url);
  return [{ type: 'image', source: inline ? { type: 'base64', media_type: inline.mimeType, data: inline.data } : { type: 'url', url: p.url } }];
}

/**
 * Thinking blocks go first (Anthropic requires them before text and tool_use in a turn). Only blocks Anthropic
 * can verify are replayed: its own signed or redacted ones, never unsigned or another upstream's.
 */
function assistantBlocks(m: Message): ARequestBlock[] {
  const thinking = (m.thinking ?? []).flatMap((t): ARequestBlock[] => {
    if (t.redacted) return [{ type: 'redacted_thinking', data: t.text }];
    if (!t.signature || t.signature.startsWith(GEMINI_SIGNATURE_PREFIX)) return [];
    return [{ type: 'thinking', thinking: t.text, signature: t.signature }];
  });
  const calls = (m.toolCalls ?? []).map((c): ARequestBlock => ({ type: 'tool_use', id: c.id, name: c.name, input: parseArguments(c.arguments, c.name) }));
  return [...thinking, ...partsToBlocks(m.content), ...calls];
}

function parseArguments(args: string, name: string): unknown {
  if (args.trim() === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    throw new UpstreamError('bad_request', `the arguments of the earlier call to tool "${name}" are not valid JSON`);
  }
}

function toolResult(m: Message): ARequestBlock {
  const content = typeof m.content === 'string' || m.content == null ? (m.content ?? '') : partsToBlocks(m.content);
  return { type: 'tool_result', tool_use_id: m.toolCallId ?? '', content, ...(m.isError ? { is_error: true } : {}) };
}
