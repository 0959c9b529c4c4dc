import { expect } from 'chai';
import { FixedWindowLimiter, formatContext, trimSnippet } from '../../src/tools/augment.js';
import { TtlCache } from '../../src/facades/common.js';
import { nextLink } from '../../src/facades/hub.js';

describe('search-augment helpers', () => {
  it('trimSnippet keeps short text, cuts long text to the limit with "..." counted in it', () => {
    expect(trimSnippet('short', 50)).to.equal('short');
    expect(trimSnippet('x'.repeat(50), 50)).to.equal('x'.repeat(50));
    expect(trimSnippet('x'.repeat(51), 50)).to.equal('x'.repeat(47) + '...');
    // a cut right after a space does not leave "word ..." behind
    expect(trimSnippet('abcd efgh ijkl', 8)).to.equal('abcd...');
    // characters, not UTF-16 units: five emoji fit a limit of five
    expect(trimSnippet('😀😀😀😀😀', 5)).to.equal('😀😀😀😀😀');
    expect(trimSnippet('line one\n\n  line two', 100)).to.equal('line one line two');
  });

  it('formatContext without an answer and with one source has no trailing blank line', () => {
    expect(formatContext('q  with\nbreak', null, [{ title: 'T', url: 'https://u', snippet: 'S' }]))
      .to.equal('Web search results for "q with break":\n\n1. T\n   S\n   Source: https://u');
  });

  it('FixedWindowLimiter: n per window per key, Retry-After until the window ends, 0 = off', () => {
    const l = new FixedWindowLimiter(2, 60_000);
    expect(l.take('a', 0)).to.equal(null);
    expect(l.take('a', 1000)).to.equal(null);
    expect(l.take('a', 1500)).to.equal(59); // 58.5 s left, rounded up
    expect(l.take('b', 1500)).to.equal(null);
    expect(l.take('a', 60_000)).to.equal(null); // a new window
    const off = new FixedWindowLimiter(0);
    for (let i = 0; i < 100; i++) expect(off.take('x')).to.equal(null);
  });
});

describe('facade helpers', () => {
  it('TtlCache: shares one load among concurrent misses, evicts the least recently used, forgets failures', async () => {
    const c = new TtlCache<number>(60_000, 2);
    let loads = 0;
    const load = (v: number) => async () => { loads++; await new Promise((r) => setTimeout(r, 5)); return v; };
    const [a, b] = await Promise.all([c.getOrLoad('a', load(1)), c.getOrLoad('a', load(99))]);
    expect([a, b, loads]).to.deep.equal([1, 1, 1]);
    await c.getOrLoad('b', load(2));
    await c.getOrLoad('a', load(0)); // touch a: b is now the oldest
    await c.getOrLoad('c', load(3)); // evicts b
    expect(c.size).to.equal(2);
    expect(await c.getOrLoad('b', load(20))).to.equal(20);
    expect(await c.getOrLoad('c', load(30))).to.equal(3);
    let thrown = false;
    await c.getOrLoad('e', async () => { throw new Error('boom'); }).catch(() => { thrown = true; });
    expect(thrown).to.equal(true);
    expect(await c.getOrLoad('e', load(5))).to.equal(5);
  });

  it('nextLink reads rel="next" from a Link header', () => {
    expect(nextLink('<https://h/api/models?cursor=abc>; rel="next"')).to.equal('https://h/api/models?cursor=abc');
    expect(nextLink('<https://h/p1>; rel="prev", </api/models?c=2>; rel=next')).to.equal('/api/models?c=2');
    expect(nextLink('<https://h/p1>; rel="prev"')).to.equal(undefined);
    expect(nextLink(undefined)).to.equal(undefined);
  });
});

describe('tool, hub and partner settings', () => {
  const base = { KEY_HASH_SECRET: 'test-secret-0123456789abcdef', DATA_DIR: '/tmp/gw-config-test' };

  it('defaults: Tavily and OpenAI endpoints, prices, limits, hub on the public hub, partner unset', async () => {
    const { loadConfig } = await import('../../src/config.js');
    const c = loadConfig(base);
    expect(c.tools).to.deep.include({ tavilyBaseUrl: 'https://api.tavily.com', ttsBaseUrl: 'https://api.openai.com/v1', ttsModel: 'tts-1',
      priceWebSearchUsd: 0.008, priceTtsPer1kCharsUsd: 0.015, guestAugmentPerMinute: 10, keyAugmentPerMinute: 60 });
    expect(c.tools.tavilyApiKey).to.equal(undefined);
    expect(c.hub).to.deep.include({ baseUrl: 'https://huggingface.co', cacheTtlMs: 300_000, timeoutMs: 10_000 });
    expect(c.partner.baseUrl).to.equal(undefined);
    // the speech key and URL fall back to the OpenAI gateway's
    const o = loadConfig({ ...base, OPENAI_API_KEY: 'sk-o', OPENAI_BASE_URL: 'http://speech.internal/v1/' });
    expect(o.tools).to.deep.include({ ttsApiKey: 'sk-o', ttsBaseUrl: 'http://speech.internal/v1' });
  });

  it('a bad value stops start-up naming the variable', async () => {
    const { loadConfig, ConfigError } = await import('../../src/config.js');
    for (const [name, value] of [['HUB_BASE_URL', 'ftp://hub'], ['TAVILY_BASE_URL', 'api.tavily.com'], ['HUB_TIMEOUT_MS', '0'],
      ['TOOL_PRICE_WEB_SEARCH', '-1'], ['GUEST_AUGMENT_PER_MINUTE', 'ten']]) {
      expect(() => loadConfig({ ...base, [name]: value }), name).to.throw(ConfigError, name);
    }
  });
});
