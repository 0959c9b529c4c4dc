/**
 * npm run build:seeds: seeds/models.json and seeds/providers.json from the models.dev snapshot
 * (../shared/reference/models-dev.json, MIT — its notice is kept in seeds/LICENSE-models-dev).
 *
 * For every gateway of seeds/gateways.json that models.dev lists (under its own provider key), each model
 * becomes one offer: prices converted from USD per million tokens to USD per token, limits, modalities,
 * capabilities, open weights, release date, deprecation. Fields a record inherits through `base_model`
 * (models.dev's shared model definitions) are filled from that definition, or from a complete record of the
 * same model elsewhere in the snapshot — but never prices: a price is only ever the gateway's own.
 * Records whose modalities stay unknown are skipped (they cannot be classified). Quality scores are null:
 * the snapshot carries no benchmark, and none is invented. Canonical ids: src/catalog/canonical.ts.
 *
 * Usage: node --import tsx scripts/build-seeds.ts [--check] [path/to/models-dev.json]
 * `--check` writes nothing and exits 1 when the committed files differ from what the snapshot gives.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { canonicalId, DEVELOPER_ALIASES } from '../src/catalog/canonical.js';
import type { CatalogOffer, DeveloperInfo } from '../src/catalog/seeds.js';
import type { GatewayInfo } from '../src/catalog/types.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const CHECK = args.includes('--check');
const SOURCE = args.find((a) => !a.startsWith('--')) ?? path.resolve(root, '../shared/reference/models-dev.json');

/** Our gateway id → models.dev provider key (where they differ; gateways absent there have no seeds). */
const MODELS_DEV_KEY: Record<string, string> = { together: 'togetherai', fireworks: 'fireworks-ai', novita: 'novita-ai' };

/** Developers the snapshot names only by slug: display name, site, and whether their own API moderates. */
const DEVELOPERS: Record<string, [string, string | null, boolean?]> = {
  openai: ['OpenAI', 'https://openai.com', true],
  anthropic: ['Anthropic', 'https://www.anthropic.com', true],
  google: ['Google', 'https://ai.google.dev'],
  'meta-llama': ['Meta Llama', 'https://www.llama.com'],
  qwen: ['Qwen (Alibaba)', 'https://qwenlm.github.io'],
  deepseek: ['DeepSeek', 'https://www.deepseek.com'],
  mistralai: ['Mistral AI', 'https://mistral.ai'],
  'x-ai': ['xAI', 'https://x.ai'],
  moonshotai: ['Moonshot AI', 'https://www.moonshot.ai'],
  'z-ai': ['Z.ai (Zhipu)', 'https://z.ai'],
  minimax: ['MiniMax', 'https://www.minimax.io'],
  xiaomi: ['Xiaomi MiMo', 'https://mimo.xiaomi.com'],
  nvidia: ['NVIDIA', 'https://www.nvidia.com'],
  microsoft: ['Microsoft', 'https://www.microsoft.com'],
  cohere: ['Cohere', 'https://cohere.com'],
  baidu: ['Baidu', 'https://www.baidu.com'],
  stepfun: ['StepFun', 'https://www.stepfun.com'],
  nousresearch: ['Nous Research', 'https://nousresearch.com'],
  perplexity: ['Perplexity', 'https://www.perplexity.ai'],
  amazon: ['Amazon', 'https://aws.amazon.com'],
  openrouter: ['OpenRouter', 'https://openrouter.ai'],
  groq: ['Groq', 'https://groq.com'],
};

type Rec = Record<string, any>;
const INHERITED = ['name', 'family', 'attachment', 'reasoning', 'tool_call', 'structured_output', 'open_weights', 'release_date', 'limit', 'modalities'];

function complete(m: Rec | undefined): boolean {
  return !!m && !m.base_model && Array.isArray(m.modalities?.input) && Array.isArray(m.modalities?.output);
}

/** Complete records by `provider/model` and by the model's last path segment, for base_model look-ups. */
function baseIndex(providers: Record<string, Rec>): Map<string, Rec> {
  const idx = new Map<string, Rec>();
  for (const pk of Object.keys(providers).sort()) {
    for (const [mk, m] of Object.entries<Rec>(providers[pk].models)) {
      if (!complete(m)) continue;
      for (const k of [`${pk}/${mk}`, mk, mk.split('/').pop()!].map((s) => s.toLowerCase())) if (!idx.has(k)) idx.set(k, m);
    }
  }
  return idx;
}

/** The record with inherited (non-price) facts filled in from its base model. */
function resolve(providers: Record<string, Rec>, idx: Map<string, Rec>, m: Rec, depth = 0): Rec {
  if (!m.base_model || depth > 4) return m;
  const [bp, ...rest] = String(m.base_model).split('/');
  const bm = rest.join('/');
  let base: Rec | undefined = providers[bp]?.models?.[bm];
  base = base && base !== m ? resolve(providers, idx, base, depth + 1) : undefined;
  if (!complete(base)) base = idx.get(String(m.base_model).toLowerCase()) ?? idx.get(bm.toLowerCase()) ?? base;
  if (!base) return m;
  const out: Rec = { ...m };
  for (const k of INHERITED) {
    if (base[k] === undefined) continue;
    if (k === 'limit' || k === 'modalities') out[k] = { ...base[k], ...(m[k] ?? {}) };
    else if (out[k] === undefined) out[k] = base[k];
  }
  return out;
}

/** USD per million → USD per token, 12 significant digits (no float noise in the seed file). */
const perToken = (v: unknown): number | null => (typeof v === 'number' && v >= 0 ? Number((v / 1e6).toPrecision(12)) : null);

const MODALITIES = new Set(['text', 'image', 'audio', 'video', 'pdf']);
const fullDate = (s: unknown) => (typeof s === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(s) ? s : null);

function toOffer(gateway: string, id: string, m: Rec): CatalogOffer | null {
  const input: string[] = (m.modalities?.input ?? []).filter((x: string) => MODALITIES.has(x));
  const output: string[] = (m.modalities?.output ?? []).filter((x: string) => MODALITIES.has(x));
  if (!input.length || !output.length) return null;
  const { modelId, developer } = canonicalId(gateway, id, m.family);
  const chat = input.includes('text') && output.includes('text');
  const context = typeof m.limit?.context === 'number' && m.limit.context > 0 ? m.limit.context : null;
  const output_ = typeof m.limit?.output === 'number' && m.limit.output > 0 ? m.limit.output : null;
  return {
    gateway,
    upstreamModel: id,
    modelId,
    developer,
    name: String(m.name ?? id),
    family: typeof m.family === 'string' ? m.family : null,
    description: null,
    pricing: {
      prompt: perToken(m.cost?.input),
      completion: perToken(m.cost?.output),
      cacheRead: perToken(m.cost?.cache_read),
      cacheWrite: perToken(m.cost?.cache_write),
      image: null,
      audioPerMinute: null,
    },
    contextLength: context,
    maxOutputTokens: output_,
    capabilities: {
      tools: m.tool_call === true,
      vision: input.includes('image'),
      reasoning: m.reasoning === true,
      jsonMode: m.structured_output === true,
      streaming: chat,
    },
    modalities: { input, output },
    openWeights: m.open_weights === true,
    isPrivate: false,
    isActive: m.status !== 'deprecated',
    releaseDate: fullDate(m.release_date),
    qualityScore: null,
  };
}

function titleCase(slug: string): string {
  return slug.split(/[-_]/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ');
}

function developers(offers: CatalogOffer[], providers: Record<string, Rec>): DeveloperInfo[] {
  const reverse = new Map<string, string>();
  for (const [alias, slug] of Object.entries(DEVELOPER_ALIASES)) if (!reverse.has(slug)) reverse.set(slug, alias);
  const slugs = [...new Set(offers.map((o) => o.developer))].sort();
  return slugs.map((slug) => {
    const known = DEVELOPERS[slug];
    const md = providers[slug] ?? providers[reverse.get(slug) ?? ''];
    const name = known?.[0] ?? md?.name ?? titleCase(slug);
    const site = known ? known[1] : null;
    return {
      slug, name, siteUrl: site,
      logoUrl: site ? `https://www.google.com/s2/favicons?domain=${new URL(site).hostname.replace(/^www\./, '')}&sz=128` : null,
      moderated: known?.[2] === true,
    };
  });
}

/** The two generated files' contents, and a log of what went in. */
export function buildSeeds(source = SOURCE): { models: string; providers: string; log: string[] } {
  const log: string[] = [];
  const snapshot = JSON.parse(fs.readFileSync(source, 'utf8'));
  const providers: Record<string, Rec> = snapshot.providers;
  const gateways: GatewayInfo[] = JSON.parse(fs.readFileSync(path.join(root, 'seeds/gateways.json'), 'utf8'));
  const idx = baseIndex(providers);
  const offers: CatalogOffer[] = [];
  let skipped = 0;
  for (const g of gateways) {
    const key = MODELS_DEV_KEY[g.id] ?? g.id;
    const p = providers[key];
    if (!p) {
      log.push(`${g.id}: not in models.dev (no seed offers)`);
      continue;
    }
    const taken = new Set<string>();
    let n = 0;
    for (const id of Object.keys(p.models).sort()) {
      const offer = toOffer(g.id, id, resolve(providers, idx, p.models[id]));
      if (!offer) { skipped++; continue; }
      // Two upstream ids of one gateway that normalise to one model (`X` and `X-fast`) stay apart: the
      // second keeps its full lower-cased id.
      if (taken.has(offer.modelId)) offer.modelId = `${offer.developer}/${id.toLowerCase().split('/').pop()}`;
      if (taken.has(offer.modelId)) { skipped++; continue; }
      taken.add(offer.modelId);
      offers.push(offer);
      n++;
    }
    log.push(`${g.id}: ${n} offers (models.dev "${key}")`);
  }
  offers.sort((a, b) => (a.gateway < b.gateway ? -1 : a.gateway > b.gateway ? 1 : a.upstreamModel < b.upstreamModel ? -1 : 1));
  const shared = new Map<string, number>();
  for (const o of offers) shared.set(o.modelId, (shared.get(o.modelId) ?? 0) + 1);
  log.push(`${offers.length} offers on ${new Set(offers.map((o) => o.gateway)).size} gateways, ${shared.size} models `
    + `(${[...shared.values()].filter((v) => v > 1).length} on 2+ gateways), ${skipped} skipped (no modalities)`);
  log.push(`source: ${snapshot.source ?? source}`);
  return {
    // One offer per line: small, and a price change is a one-line diff.
    models: `[\n${offers.map((o) => JSON.stringify(o)).join(',\n')}\n]\n`,
    providers: JSON.stringify(developers(offers, providers), null, 2) + '\n',
    log,
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const out = buildSeeds();
  const files = { 'seeds/models.json': out.models, 'seeds/providers.json': out.providers };
  if (CHECK) {
    const stale = Object.entries(files).filter(([f, text]) => !fs.existsSync(path.join(root, f)) || fs.readFileSync(path.join(root, f), 'utf8') !== text);
    if (stale.length) {
      console.error(`stale: ${stale.map(([f]) => f).join(', ')} — run \`npm run build:seeds\``);
      process.exit(1);
    }
    console.log('seeds are current.');
  } else {
    for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(root, f), text);
    for (const line of out.log) console.log(line);
  }
}
