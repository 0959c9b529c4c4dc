/**
 * Canonical model ids: `developer/model`, lower case, exactly one `/`. The same model served by several
 * gateways gets one id so routers can fail over between them. Used by scripts/build-seeds.ts (seed offers)
 * and by discovery (models an upstream lists that the seeds do not know), so both agree.
 *
 * The rule, in order (documented in seeds/README.md):
 * 1. Per-gateway clean-up of the upstream id: lower case; Fireworks' `accounts/<a>/models/` prefix removed and
 *    its `5p1` version spelling turned into `5.1`; Anthropic's `4-5` version spelling turned into `4.5`;
 *    deployment suffixes that do not change the model removed (`-turbo`, `-tput`, `-fp8` on Together,
 *    `-turbo`, `-fp8` on DeepInfra, `-fp8` on Novita, `-tee` on Chutes, `-fast` on Nebius); a few
 *    gateway-specific names mapped explicitly (Groq's `llama-3.3-70b-versatile`).
 * 2. Developer: the id's own prefix when it has one (`meta-llama/…`, normalised through DEVELOPER_ALIASES so
 *    `deepseek-ai` and `deepseek` agree), else the developer of a first-party gateway (openai, anthropic,
 *    google, xai → `x-ai`), else inferred from the model family or name (`llama…` → `meta-llama`), else the
 *    gateway id itself. Developer slugs follow OpenRouter's spelling, the most widely used one.
 * 3. Anything finer (e.g. `qwen3-235b-a22b-2507` vs `qwen3-235b-a22b-instruct-2507`) is not guessed: such
 *    offers stay separate models.
 */

/** Org spellings used by gateways → the canonical developer slug. */
export const DEVELOPER_ALIASES: Record<string, string> = {
  'deepseek-ai': 'deepseek',
  'zai-org': 'z-ai',
  zai: 'z-ai',
  thudm: 'z-ai',
  zhipuai: 'z-ai',
  minimaxai: 'minimax',
  xiaomimimo: 'xiaomi',
  'stepfun-ai': 'stepfun',
  mistral: 'mistralai',
  liquidai: 'liquid',
  alibaba: 'qwen',
  meta: 'meta-llama',
  xai: 'x-ai',
  moonshot: 'moonshotai',
};

/** Gateways that serve only their own developer's models. */
export const FIRST_PARTY: Record<string, string> = { openai: 'openai', anthropic: 'anthropic', google: 'google', xai: 'x-ai' };

/** Name (or family) prefixes → developer, for ids without an org prefix on third-party gateways. */
const NAME_RULES: Array<[RegExp, string]> = [
  [/^(gpt|o\d|chatgpt|whisper|dall-e|text-embedding|tts-|omni-moderation|codex)/, 'openai'],
  [/^claude/, 'anthropic'],
  [/^(gemini|gemma|imagen|veo|lyria)/, 'google'],
  [/^grok/, 'x-ai'],
  [/^(meta-)?llama/, 'meta-llama'],
  [/^(qwen|qwq)/, 'qwen'],
  [/^deepseek/, 'deepseek'],
  [/^(zai-)?glm/, 'z-ai'],
  [/^kimi/, 'moonshotai'],
  [/^minimax/, 'minimax'],
  [/^(mistral|mixtral|codestral|devstral|ministral|pixtral|magistral|voxtral)/, 'mistralai'],
  [/^mimo/, 'xiaomi'],
  [/^(phi-|wizardlm)/, 'microsoft'],
  [/^command/, 'cohere'],
  [/^nemotron/, 'nvidia'],
  [/^ernie/, 'baidu'],
  [/^step-/, 'stepfun'],
];

/** Deployment suffixes per gateway that name a serving variant, not a different model. */
const SUFFIXES: Record<string, string[]> = {
  together: ['-turbo', '-tput', '-fp8'],
  deepinfra: ['-turbo', '-fp8'],
  novita: ['-fp8'],
  chutes: ['-tee'],
  nebius: ['-fast'],
};

/** Gateway-specific names of well-known models (lower-cased upstream id → canonical id). */
const EXPLICIT: Record<string, Record<string, string>> = {
  groq: {
    'llama-3.1-8b-instant': 'meta-llama/llama-3.1-8b-instruct',
    'llama-3.3-70b-versatile': 'meta-llama/llama-3.3-70b-instruct',
  },
};

export function normaliseDeveloper(raw: string): string {
  const d = raw.toLowerCase().replace(/^~/, '');
  return DEVELOPER_ALIASES[d] ?? d;
}

/** The developer a bare model name (or family) points to, if any rule matches. */
export function inferDeveloper(name: string, family?: string | null): string | undefined {
  for (const s of [family, name]) {
    if (!s) continue;
    const lower = s.toLowerCase();
    for (const [re, dev] of NAME_RULES) if (re.test(lower)) return dev;
  }
  return undefined;
}

function cleanModelPart(gateway: string, model: string): string {
  let m = model.toLowerCase();
  if (gateway === 'fireworks') m = m.replace(/^accounts\/[^/]+\/(models|routers)\//, '').replace(/(\d)p(\d)/g, '$1.$2');
  if (gateway === 'anthropic') m = m.replace(/-(\d)-(\d)(?=-|$)/, '-$1.$2');
  for (let changed = true; changed;) {
    changed = false;
    for (const s of SUFFIXES[gateway] ?? []) {
      if (m.endsWith(s) && m.length > s.length) {
        m = m.slice(0, -s.length);
        changed = true;
      }
    }
  }
  return m;
}

/** Canonical `developer/model` id of `upstreamId` as served by `gateway`. */
export function canonicalId(gateway: string, upstreamId: string, family?: string | null): { modelId: string; developer: string } {
  const explicit = EXPLICIT[gateway]?.[upstreamId.toLowerCase()];
  if (explicit) return { modelId: explicit, developer: explicit.split('/')[0] };
  const cleaned = cleanModelPart(gateway, upstreamId);
  const parts = cleaned.split('/').filter(Boolean);
  let developer: string;
  let model: string;
  if (parts.length >= 2) {
    // `org/model`, or deeper paths where the last two segments are the meaningful ones
    developer = normaliseDeveloper(parts[parts.length - 2]);
    model = parts[parts.length - 1];
  } else {
    model = parts[0] ?? cleaned;
    developer = FIRST_PARTY[gateway] ?? inferDeveloper(model, family) ?? gateway;
  }
  if (developer === 'z-ai') model = model.replace(/^zai-/, '');
  return { modelId: `${developer}/${model}`, developer };
}
