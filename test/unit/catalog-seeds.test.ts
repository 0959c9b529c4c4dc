import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { loadSeeds, DEFAULT_SEEDS_DIR } from '../../src/catalog/seeds.js';
import { canonicalId } from '../../src/catalog/canonical.js';
import { decimal } from '../../src/catalog/views.js';
import { blendedPrice } from '../../src/catalog/categories.js';
import { buildSeeds } from '../../scripts/build-seeds.js';

const REFERENCE = path.resolve(DEFAULT_SEEDS_DIR, '../../shared/reference/models-dev.json');

describe('catalog seeds', () => {
  const seeds = loadSeeds();

  it('has exactly the gateways of the provider registry, with the key variable rule and SDK-style base URLs', () => {
    expect(seeds.gateways.map((g) => g.id)).to.deep.equal(['openai', 'anthropic', 'google', 'openrouter', 'groq', 'together', 'fireworks',
      'deepinfra', 'cerebras', 'xai', 'novita', 'nebius', 'featherless', 'chutes', 'huggingface', 'local']);
    for (const g of seeds.gateways) {
      expect(g.keyEnv, g.id).to.equal(`${g.id.toUpperCase().replace(/-/g, '_')}_API_KEY`);
      expect(g.baseUrl, g.id).to.match(/^https?:\/\/[^/]+(\/.*)?[^/]$/);
    }
    const by = Object.fromEntries(seeds.gateways.map((g) => [g.id, g]));
    expect(by.google).to.include({ wireFormat: 'gemini', baseUrl: 'https://generativelanguage.googleapis.com' });
    expect(by.anthropic).to.include({ wireFormat: 'anthropic', baseUrl: 'https://api.anthropic.com' });
    expect(by.openai.baseUrl).to.equal('https://api.openai.com/v1');
    expect(by.local).to.include({ baseUrl: 'http://127.0.0.1:11434/v1', keyOptional: true, keyEnv: 'LOCAL_API_KEY' });
    expect(by.together.aliases).to.include('togetherai');
    expect(by.fireworks.aliases).to.include('fireworks-ai');
    expect(by.google.aliases).to.include('gemini');
    expect(by.novita.aliases).to.include('novita-ai');
  });

  it('holds at least 300 offers on at least 12 gateways, and shares model ids across gateways', () => {
    expect(seeds.offers.length).to.be.at.least(300);
    expect(new Set(seeds.offers.map((o) => o.gateway)).size).to.be.at.least(12);
    const llama = seeds.offers.filter((o) => o.modelId === 'meta-llama/llama-3.3-70b-instruct').map((o) => o.gateway).sort();
    expect(llama).to.include.members(['deepinfra', 'groq', 'huggingface', 'nebius', 'novita', 'openrouter', 'together']);
    expect(seeds.offers.filter((o) => o.modelId === 'openai/gpt-oss-120b').length).to.be.at.least(5);
    expect(seeds.offers.every((o) => o.qualityScore === null)).to.equal(true); // no benchmark in the snapshot
  });

  it('stores models.dev prices per token (the snapshot publishes USD per million)', () => {
    const ref = JSON.parse(fs.readFileSync(REFERENCE, 'utf8')).providers;
    const cases: Array<[string, string, string]> = [['openai', 'openai', 'gpt-4o'], ['groq', 'groq', 'llama-3.3-70b-versatile'],
      ['together', 'togetherai', 'meta-llama/Llama-3.3-70B-Instruct-Turbo'], ['anthropic', 'anthropic', 'claude-sonnet-4-5']];
    for (const [gateway, key, id] of cases) {
      const offer = seeds.offers.find((o) => o.gateway === gateway && o.upstreamModel === id)!;
      const cost = ref[key].models[id].cost;
      expect(offer.pricing.prompt, id).to.be.closeTo(cost.input / 1e6, 1e-15);
      expect(offer.pricing.completion, id).to.be.closeTo(cost.output / 1e6, 1e-15);
    }
    expect(seeds.offers.find((o) => o.gateway === 'openai' && o.upstreamModel === 'gpt-4o')!.pricing.prompt).to.equal(0.0000025);
  });

  it('seeds/models.json and providers.json are what npm run build:seeds makes from the snapshot', () => {
    const built = buildSeeds(REFERENCE);
    expect(built.models === fs.readFileSync(path.join(DEFAULT_SEEDS_DIR, 'models.json'), 'utf8'), 'run npm run build:seeds').to.equal(true);
    expect(built.providers === fs.readFileSync(path.join(DEFAULT_SEEDS_DIR, 'providers.json'), 'utf8'), 'run npm run build:seeds').to.equal(true);
  });
});

describe('catalog canonical ids', () => {
  const cases: Array<[string, string, string]> = [
    ['together', 'meta-llama/Llama-3.3-70B-Instruct-Turbo', 'meta-llama/llama-3.3-70b-instruct'],
    ['groq', 'llama-3.3-70b-versatile', 'meta-llama/llama-3.3-70b-instruct'],
    ['fireworks', 'accounts/fireworks/models/kimi-k2p6', 'moonshotai/kimi-k2.6'],
    ['anthropic', 'claude-sonnet-4-5', 'anthropic/claude-sonnet-4.5'],
    ['anthropic', 'claude-opus-4-20250514', 'anthropic/claude-opus-4-20250514'],
    ['cerebras', 'zai-glm-4.7', 'z-ai/glm-4.7'],
    ['cerebras', 'gpt-oss-120b', 'openai/gpt-oss-120b'],
    ['xai', 'grok-4.3', 'x-ai/grok-4.3'],
    ['chutes', 'deepseek-ai/DeepSeek-V3.2-TEE', 'deepseek/deepseek-v3.2'],
    ['nebius', 'openai/gpt-oss-120b-fast', 'openai/gpt-oss-120b'],
    ['openrouter', '~anthropic/claude-opus-latest', 'anthropic/claude-opus-latest'],
    ['openrouter', 'meta-llama/llama-3.3-70b-instruct:free', 'meta-llama/llama-3.3-70b-instruct:free'],
    ['openrouter', 'gpt-3.5-turbo', 'openai/gpt-3.5-turbo'],
    ['local', 'llama3.2:3b', 'meta-llama/llama3.2:3b'],
    ['groq', 'compound', 'groq/compound'],
  ];
  for (const [gateway, id, expected] of cases) {
    it(`${gateway} ${id} → ${expected}`, () => expect(canonicalId(gateway, id).modelId).to.equal(expected));
  }
});

describe('catalog prices', () => {
  it('decimal strings never use an exponent or show float noise', () => {
    expect(decimal(1.5e-7)).to.equal('0.00000015');
    expect(decimal(0.15 / 1e6)).to.equal('0.00000015');
    expect(decimal(4.815e-8)).to.equal('0.00000004815');
    expect(decimal(0.0000025)).to.equal('0.0000025');
    expect(decimal(1e-12)).to.equal('0.000000000001');
    expect(decimal(0)).to.equal('0');
    expect(decimal(12.5)).to.equal('12.5');
    expect(decimal(100)).to.equal('100');
    expect(decimal(null)).to.equal(null);
  });
  it('blended price is (3 × prompt + completion) / 4 and lands exactly on the tier thresholds', () => {
    expect(blendedPrice(0.000003, 0.000003)).to.equal(0.000003);
    expect(blendedPrice(2.5e-7, 0.00000125)).to.equal(5e-7);
    expect(blendedPrice(1e-7, null)).to.equal(null);
  });
});
