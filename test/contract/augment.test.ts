import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { startFakeUpstream, json, type FakeUpstream } from '../support/upstream.js';

/** A Tavily /search answer: one long snippet, one title and snippet with line breaks, one result without a title. */
const RESULTS = [
  { title: 'Dune (novel) - Wikipedia', url: 'https://en.wikipedia.org/wiki/Dune_(novel)', score: 0.93, raw_content: null,
    content: 'Dune is a 1965 epic science fiction novel by American author Frank Herbert, originally published as two separate serials in Analog magazine.' },
  { title: 'Frank  Herbert\n| Britannica', url: 'https://www.britannica.com/biography/Frank-Herbert', score: 0.8, raw_content: null,
    content: 'American author.\nBest known for Dune.' },
  { title: '', url: 'https://example.org/dune', score: 0.5, raw_content: null, content: 'Short.' },
];

const EXPECTED_CONTEXT = [
  'Web search results for "who wrote dune":',
  '',
  'Summary: Frank Herbert wrote Dune, published in 1965.',
  '',
  '1. Dune (novel) - Wikipedia',
  '   Dune is a 1965 epic science fiction novel by American aut...',
  '   Source: https://en.wikipedia.org/wiki/Dune_(novel)',
  '',
  '2. Frank Herbert | Britannica',
  '   American author. Best known for Dune.',
  '   Source: https://www.britannica.com/biography/Frank-Herbert',
  '',
  '3. https://example.org/dune',
  '   Short.',
  '   Source: https://example.org/dune',
].join('\n');

describe('contract: search augmentation', () => {
  let gw: TestGateway;
  let tavily: FakeUpstream;
  let key: string;
  let answer: (body: any) => [number, object] = () => [200, {}];

  before(async () => {
    tavily = await startFakeUpstream((req, res) => {
      const [status, body] = answer(JSON.parse(req.body));
      json(res, status, body);
    });
    gw = await startTestGateway({ env: { TAVILY_API_KEY: 'tvly-k', TAVILY_BASE_URL: tavily.url, GUEST_AUGMENT_PER_MINUTE: '1000' } });
    ({ key } = await gw.newKey(1));
  });
  after(async () => {
    await gw.close();
    await tavily.close();
  });
  beforeEach(() => {
    answer = (b) => [200, { query: b.query, answer: b.include_answer ? 'Frank Herbert wrote Dune, published in 1965.' : undefined,
      images: [], results: RESULTS.slice(0, b.max_results), response_time: 0.9 }];
  });

  const augment = (body: object, headers: Record<string, string> = {}) =>
    request(gw.app).post('/v1/tools/search/augment').set(headers).send(body);

  it('builds the context line by line: heading, summary, numbered sources with trimmed snippets', async () => {
    const res = await augment({ query: 'who wrote dune', max_snippet_length: 60 }, { Authorization: `Bearer ${key}` });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.context.split('\n')).to.deep.equal(EXPECTED_CONTEXT.split('\n'));
    expect(res.body).to.include({ success: true, query: 'who wrote dune', results_count: 3, error: null,
      answer: 'Frank Herbert wrote Dune, published in 1965.' });
    expect(res.body.sources[0]).to.deep.equal({ title: 'Dune (novel) - Wikipedia', url: 'https://en.wikipedia.org/wiki/Dune_(novel)',
      snippet: 'Dune is a 1965 epic science fiction novel by American aut...' });
    expect(res.body.sources[0].snippet).to.have.length(60);
    const sent = JSON.parse(tavily.requests.at(-1)!.body);
    expect(sent).to.include({ query: 'who wrote dune', max_results: 5, search_depth: 'basic', include_answer: true });
    expect(tavily.requests.at(-1)!.headers.authorization).to.equal('Bearer tvly-k');
  });

  it('without include_answer there is no Summary line and answer is null; options reach the search service', async () => {
    const res = await augment({ query: 'who wrote dune', include_answer: false, max_results: 1, search_depth: 'advanced',
      include_domains: ['wikipedia.org'], exclude_domains: ['reddit.com'] });
    expect(res.status).to.equal(200);
    expect(res.body.context).to.equal([
      'Web search results for "who wrote dune":',
      '',
      '1. Dune (novel) - Wikipedia',
      // default max_snippet_length 300: the 140-character snippet is whole
      '   Dune is a 1965 epic science fiction novel by American author Frank Herbert, originally published as two separate serials in Analog magazine.',
      '   Source: https://en.wikipedia.org/wiki/Dune_(novel)',
    ].join('\n'));
    expect(res.body).to.include({ answer: null, results_count: 1 });
    expect(JSON.parse(tavily.requests.at(-1)!.body)).to.include({ include_answer: false, max_results: 1, search_depth: 'advanced' });
    expect(JSON.parse(tavily.requests.at(-1)!.body).include_domains).to.deep.equal(['wikipedia.org']);
    expect(JSON.parse(tavily.requests.at(-1)!.body).exclude_domains).to.deep.equal(['reddit.com']);
  });

  it('no results: the heading, a blank line and "No results found."', async () => {
    answer = () => [200, { query: 'zzqx', answer: null, results: [], response_time: 0.1 }];
    const res = await augment({ query: 'zzqx' });
    expect(res.body).to.include({ success: true, results_count: 0, context: 'Web search results for "zzqx":\n\nNo results found.' });
  });

  it('a failing search service is a 200 with success false and the empty shape', async () => {
    answer = () => [502, { error: 'bad gateway' }];
    const res = await augment({ query: 'dune' });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.include({ success: false, query: 'dune', context: '', results_count: 0, answer: null, sources: [] });
    expect(res.body.error).to.contain('HTTP 502');
  });

  it('bad request bodies are 422 at their field', async () => {
    const res = await augment({ query: 'x', max_results: 11 });
    expect(res.status).to.equal(422);
    expect(res.body.detail[0].loc).to.deep.equal(['body', 'max_results']);
    const empty = await augment({ query: '' });
    expect(empty.status).to.equal(422);
  });

  it('buildAugmentContext (for auto_web_search) gives the same context and count as the endpoint', async () => {
    const out = await gw.services.search.buildAugmentContext('who wrote dune', { max_snippet_length: 60 });
    expect(out).to.deep.equal({ context: EXPECTED_CONTEXT, results_count: 3 });
    answer = () => [500, {}];
    const failed = await gw.services.search.buildAugmentContext('who wrote dune');
    expect(failed.context).to.equal('');
    expect(failed.results_count).to.equal(0);
    expect(failed.error).to.contain('HTTP 500');
  });
});

describe('contract: search augmentation rate limits and configuration', () => {
  let gw: TestGateway;
  let tavily: FakeUpstream;
  before(async () => {
    tavily = await startFakeUpstream((_req, res) => json(res, 200, { query: 'q', results: [], response_time: 0.1 }));
    gw = await startTestGateway({ env: { TAVILY_API_KEY: 'tvly-k', TAVILY_BASE_URL: tavily.url, GUEST_AUGMENT_PER_MINUTE: '2', KEY_AUGMENT_PER_MINUTE: '3' } });
  });
  after(async () => {
    await gw.close();
    await tavily.close();
  });

  it('guests get 2 a minute per address, then 429 with Retry-After; keys have their own limit', async () => {
    const guest = () => request(gw.app).post('/v1/tools/search/augment').send({ query: 'q' });
    expect((await guest()).status).to.equal(200);
    expect((await guest()).status).to.equal(200);
    const limited = await guest();
    expect(limited.status).to.equal(429);
    expect(limited.body.error.type).to.equal('rate_limit_error');
    const wait = Number(limited.headers['retry-after']);
    expect(wait).to.be.within(1, 60);
    const before = tavily.requests.length;
    await guest();
    expect(tavily.requests.length, 'a limited request does not reach the search service').to.equal(before);

    const { key } = await gw.newKey(1);
    const keyed = () => request(gw.app).post('/v1/tools/search/augment').set({ Authorization: `Bearer ${key}` }).send({ query: 'q' });
    for (let i = 0; i < 3; i++) expect((await keyed()).status).to.equal(200);
    expect((await keyed()).status).to.equal(429);
  });

  it('without TAVILY_API_KEY the answer is success false naming the setting', async () => {
    const bare = await startTestGateway();
    try {
      const res = await request(bare.app).post('/v1/tools/search/augment').send({ query: 'q' });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ success: false, context: '', results_count: 0 });
      expect(res.body.error).to.contain('TAVILY_API_KEY');
    } finally {
      await bare.close();
    }
  });
});
