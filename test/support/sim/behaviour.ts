/**
 * What the simulator answers, independent of the wire format: the model name picks a behaviour, a normalised
 * chat (`SimChat`, built by each format module) plus the behaviour give a `Reply`, and the format modules only
 * serialise it. Token counting (documented in ../simulator.ts) lives here so all three formats agree.
 */

export type Behaviour =
  | { kind: 'echo' }
  | { kind: 'slow'; ms: number }
  | { kind: 'error'; status: number }
  | { kind: 'flaky'; failures: number }
  | { kind: 'stream-break' }
  | { kind: 'tool-call' }
  | { kind: 'chunks'; n: number; everyMs?: number; padBytes?: number }
  | { kind: 'keepalive' }
  | { kind: 'usage-with-choices' }
  | { kind: 'cached' }
  | { kind: 'json' }
  | { kind: 'malformed' }
  | { kind: 'hang' }
  | { kind: 'stop-seq' }
  | { kind: 'length' }
  | { kind: 'reset' }
  | { kind: 'truncated' }
  | { kind: 'dribble'; ms: number }
  | { kind: 'drip'; ms: number };

/** The models every list endpoint reports (any other name also works and behaves as `sim/echo`). */
export const SIM_MODELS = [
  'sim/echo', 'sim/slow-200ms', 'sim/error-429', 'sim/error-500', 'sim/flaky-2', 'sim/stream-break', 'sim/tool-call',
  'sim/chunks-5', 'sim/chunks-20', 'sim/chunks-20-every-10ms', 'sim/slow-4000ms', 'sim/keepalive', 'sim/usage-with-choices', 'sim/cached', 'sim/json', 'sim/malformed', 'sim/hang',
  'sim/stop-seq', 'sim/length',
];

/** `models/sim/echo` (Gemini style) and `sim/echo` name the same model. */
export function normaliseModel(model: string | undefined): string {
  return (model ?? '').replace(/^models\//, '');
}

export function behaviourOf(model: string | undefined): Behaviour {
  const m = normaliseModel(model);
  let g: RegExpMatchArray | null;
  if ((g = m.match(/^sim\/slow-(\d{1,7})ms$/))) return { kind: 'slow', ms: Number(g[1]) };
  if ((g = m.match(/^sim\/error-([45]\d\d)$/))) return { kind: 'error', status: Number(g[1]) };
  if ((g = m.match(/^sim\/flaky-(\d{1,6})$/))) return { kind: 'flaky', failures: Number(g[1]) };
  if ((g = m.match(/^sim\/chunks-(\d{1,5})$/)) && Number(g[1]) >= 1) return { kind: 'chunks', n: Number(g[1]) };
  if ((g = m.match(/^sim\/chunks-(\d{1,5})-every-(\d{1,6})ms$/)) && Number(g[1]) >= 1) return { kind: 'chunks', n: Number(g[1]), everyMs: Number(g[2]) };
  if ((g = m.match(/^sim\/chunks-(\d{1,5})-padded-(\d{1,5})$/)) && Number(g[1]) >= 1) return { kind: 'chunks', n: Number(g[1]), padBytes: Number(g[2]) };
  if ((g = m.match(/^sim\/dribble-(\d{1,6})ms$/))) return { kind: 'dribble', ms: Number(g[1]) };
  if ((g = m.match(/^sim\/drip-(\d{1,6})ms$/))) return { kind: 'drip', ms: Number(g[1]) };
  const simple = ['stream-break', 'tool-call', 'keepalive', 'usage-with-choices', 'cached', 'json', 'malformed', 'hang', 'stop-seq', 'length',
    'reset', 'truncated'] as const;
  for (const k of simple) if (m === `sim/${k}`) return { kind: k };
  return { kind: 'echo' };
}

/** A chat request reduced to what the behaviours need; each format module builds one from its own body. */
export interface SimChat {
  model: string;
  /** The text of every message (system included), one entry per message: the basis of prompt tokens. */
  messageTexts: string[];
  /** Text of the last message the user wrote (tool results are not user text). */
  lastUserText: string;
  /** The result text when the LAST message is a tool result. */
  toolResult?: string;
  /** Declared function tools, in order. */
  tools: Array<{ name: string; parameters?: unknown }>;
  stop: string[];
  maxTokens?: number;
  /** The client asked for reasoning output (Anthropic `thinking`, Gemini `includeThoughts`). */
  thinking: boolean;
}

export interface SimUsage {
  prompt: number;
  completion: number;
  /** Part of `prompt` read from cache (only `sim/cached`). */
  cached: number;
  /** Reasoning words, reported apart from `completion` (see each format for how it is counted). */
  thinking: number;
}

export interface Reply {
  /** Text deltas in order; their concatenation is `text`. Empty for a tool call. */
  chunks: string[];
  text: string;
  thinking?: { text: string; chunks: string[]; signature: string };
  toolCall?: { name: string; args: Record<string, unknown>; argsJson: string };
  finish: 'stop' | 'length' | 'tool' | 'stop_sequence';
  /** The stop sequence that ended the reply (`sim/stop-seq` only). */
  stopSequence: string | null;
  usage: SimUsage;
  /** Wire quirks, honoured by the stream writers. */
  streamBreak: boolean;
  keepalive: boolean;
  usageWithChoices: boolean;
  malformed: boolean;
}

export const chars = (s: string): number => [...s].length;
export const words = (s: string): number => s.split(/\s+/).filter(Boolean).length;
export const promptTokens = (texts: string[]): number => texts.reduce((n, t) => n + Math.ceil(chars(t) / 4), 0);

/** Splits before every word that follows whitespace, so the pieces join back to exactly `text`. */
export function splitWords(text: string): string[] {
  const parts = text.split(/(?<=\s)(?=\S)/);
  return parts.length ? parts : [''];
}

/** Splits a string into pieces of at most `size` characters (tool-call argument deltas). */
export function splitEvery(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [''];
}

/**
 * Arguments for `sim/tool-call`: `{"query":"weather in Paris"}`, unless the tool's schema requires a string
 * property that is not `query` — then the first such property is set to "test", so the call is valid for it.
 */
export function toolArgs(parameters: unknown): Record<string, unknown> {
  const schema = (parameters ?? {}) as { properties?: Record<string, { type?: unknown }>; required?: unknown };
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const firstString = required.find((p) => {
    const t = schema.properties?.[p]?.type;
    return t === 'string' || (Array.isArray(t) && t.includes('string')) || (typeof t === 'string' && t.toUpperCase() === 'STRING');
  });
  if (firstString && firstString !== 'query') return { [firstString]: 'test' };
  return { query: 'weather in Paris' };
}

const STOP_TEXT = 'Hello STOP world';

function earliestStop(text: string, stops: string[]): { at: number; seq: string } | undefined {
  let best: { at: number; seq: string } | undefined;
  for (const seq of stops) {
    if (!seq) continue;
    const at = text.indexOf(seq);
    if (at !== -1 && (!best || at < best.at)) best = { at, seq };
  }
  return best;
}

/** The reply for a chat that passed the gate (no error, hang or delay left to apply). */
export function planReply(chat: SimChat, b: Behaviour): Reply {
  const echo = `Echo: ${chat.lastUserText}`;
  let text = echo;
  let chunks: string[] | undefined;
  let finish: Reply['finish'] = 'stop';
  let stopSequence: string | null = null;
  let toolCall: Reply['toolCall'];

  if (chat.toolResult !== undefined && b.kind === 'tool-call') {
    text = `Tool said: ${chat.toolResult}`;
  } else if (b.kind === 'tool-call' && chat.tools.length) {
    const args = toolArgs(chat.tools[0].parameters);
    toolCall = { name: chat.tools[0].name, args, argsJson: JSON.stringify(args) };
    text = '';
    chunks = [];
    finish = 'tool';
  } else if (b.kind === 'chunks') {
    chunks = Array.from({ length: b.n }, (_, i) => `w${i + 1} `);
    text = chunks.join('');
  } else if (b.kind === 'drip') {
    chunks = ['w1 ', 'w2 ', 'w3 ', 'w4 ', 'w5 '];
    text = chunks.join('');
  } else if (b.kind === 'stream-break') {
    chunks = ['w1 ', 'w2 ', 'w3 '];
    text = chunks.join('');
  } else if (b.kind === 'json') {
    text = JSON.stringify({ ok: true, echo: chat.lastUserText });
  } else if (b.kind === 'stop-seq') {
    const hit = earliestStop(STOP_TEXT, chat.stop);
    text = hit ? STOP_TEXT.slice(0, hit.at) : STOP_TEXT;
    if (hit) {
      finish = 'stop_sequence';
      stopSequence = hit.seq;
    }
  } else if (b.kind === 'length') {
    const all = echo.split(/\s+/).filter(Boolean);
    text = all.slice(0, Math.max(1, Math.min(chat.maxTokens ?? 1, all.length))).join(' ');
    finish = 'length';
  }

  const prompt = promptTokens(chat.messageTexts);
  const thinkingText = chat.thinking ? `Thinking about: ${chat.lastUserText}` : undefined;
  return {
    chunks: chunks ?? splitWords(text),
    text,
    ...(thinkingText !== undefined ? { thinking: { text: thinkingText, chunks: splitWords(thinkingText), signature: 'sim-signature' } } : {}),
    toolCall,
    finish,
    stopSequence,
    usage: {
      prompt,
      completion: Math.max(1, words(toolCall ? toolCall.argsJson : text)),
      cached: b.kind === 'cached' ? Math.floor(prompt / 2) : 0,
      thinking: thinkingText !== undefined ? words(thinkingText) : 0,
    },
    streamBreak: b.kind === 'stream-break',
    keepalive: b.kind === 'keepalive',
    usageWithChoices: b.kind === 'usage-with-choices',
    malformed: b.kind === 'malformed',
  };
}
