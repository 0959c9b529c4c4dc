import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, ADMIN_KEY, type TestGateway } from '../support/app.js';
import { postgresAvailable, DIALECTS } from '../support/db.js';
import { startFakeUpstream, json, type FakeUpstream } from '../support/upstream.js';
import { mp3Frames } from '../support/audio.js';

/** A Tavily /search answer as the service documents it (response_time arrives as a string in its examples). */
const TAVILY_ANSWER = {
  query: 'who wrote dune',
  answer: 'Frank Herbert wrote Dune (1965).',
  images: [],
  results: [
    { title: 'Dune (novel) - Wikipedia', url: 'https://en.wikipedia.org/wiki/Dune_(novel)', content: 'Dune is a 1965 novel by Frank Herbert.', score: 0.91, raw_content: null },
    { title: 'Frank Herbert', url: 'https://www.britannica.com/biography/Frank-Herbert', content: 'American science-fiction writer.', score: 0.72, raw_content: null },
  ],
  response_time: '1.67',
};

describe('contract: tool listing and definitions', () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startTestGateway();
    ({ key } = await gw.newKey(1));
  });
  after(() => gw.close());

  it('GET /v1/tools lists both tools sorted by name, with schemas and billing facts', async () => {
    const res = await request(gw.app).get('/v1/tools');
    expect(res.status).to.equal(200);
    expect(res.body.count).to.equal(2);
    expect(res.body.tools.map((t: any) => t.name)).to.deep.equal(['text_to_speech', 'web_search']);
    const ws = res.body.tools[1];
    expect(ws).to.include({ category: 'search', requires_auth: true, billed: true, version: '1.0.0' });
    expect(ws.parameters.required).to.deep.equal(['query']);
    expect(ws.parameters.properties.max_results).to.include({ minimum: 1, maximum: 10, default: 5 });
    expect(ws.parameters.properties.search_depth.enum).to.deep.equal(['basic', 'advanced']);
    const tts = res.body.tools[0];
    expect(tts.parameters.properties.format.enum).to.deep.equal(['mp3', 'wav', 'opus']);
  });

  it('GET /v1/tools/definitions is accepted unchanged as the `tools` of a chat request (a broken one is not)', async () => {
    const defs = await request(gw.app).get('/v1/tools/definitions');
    expect(defs.status).to.equal(200);
    expect(defs.body.map((d: any) => d.function.name)).to.deep.equal(['text_to_speech', 'web_search']);
    expect(defs.body[1].type).to.equal('function');
    const chat = (tools: unknown) => request(gw.app).post('/v1/chat/completions').set({ Authorization: `Bearer ${key}` })
      .send({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'search dune' }], tools, tool_choice: 'auto' });
    const ok = await chat(defs.body);
    // Validation passed: whatever the engine answers (501 until it lands), it is not a 422.
    expect(ok.status, JSON.stringify(ok.body)).to.not.equal(422);
    const broken = await chat([{ type: 'function', function: { description: 'no name' } }]);
    expect(broken.status).to.equal(422);
    expect(broken.body.detail.some((d: any) => JSON.stringify(d.loc) === JSON.stringify(['body', 'tools', 0, 'function', 'name']))).to.equal(true);
  });

  it('GET /v1/tools/{name} gives definition and metadata; an unknown name is 404', async () => {
    const res = await request(gw.app).get('/v1/tools/web_search');
    expect(res.status).to.equal(200);
    expect(res.body.metadata).to.deep.equal({ version: '1.0.0', requires_auth: true, billed: true, upstream: 'tavily' });
    expect(res.body.definition.function.parameters).to.deep.equal(res.body.parameters);
    const tts = await request(gw.app).get('/v1/tools/text_to_speech');
    expect(tts.body.metadata.upstream).to.equal('openai');
    const missing = await request(gw.app).get('/v1/tools/Web_Search');
    expect(missing.status).to.equal(404);
    expect(missing.body.error.type).to.equal('not_found_error');
  });

  it('POST /v1/tools/execute: 401 without a key, 404 for an unknown tool', async () => {
    const noKey = await request(gw.app).post('/v1/tools/execute').send({ tool_name: 'web_search', parameters: { query: 'x' } });
    expect(noKey.status).to.equal(401);
    const unknown = await request(gw.app).post('/v1/tools/execute').set({ Authorization: `Bearer ${key}` })
      .send({ tool_name: 'calculator', parameters: {} });
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error.message).to.contain('calculator');
  });

  it('POST /v1/tools/execute: parameters are validated against the tool schema, 422 naming each field', async () => {
    const run = (parameters: unknown) => request(gw.app).post('/v1/tools/execute').set({ Authorization: `Bearer ${key}` })
      .send({ tool_name: 'web_search', parameters });
    const locs = async (parameters: unknown) => {
      const res = await run(parameters);
      expect(res.status, JSON.stringify(res.body)).to.equal(422);
      return res.body.detail.map((d: any) => [JSON.stringify(d.loc), d.type]);
    };
    expect(await locs({ query: 'x', max_results: 11 })).to.deep.include([JSON.stringify(['body', 'parameters', 'max_results']), 'less_than_equal']);
    expect(await locs({ query: 'x', max_results: 0 })).to.deep.include([JSON.stringify(['body', 'parameters', 'max_results']), 'greater_than_equal']);
    expect(await locs({})).to.deep.include([JSON.stringify(['body', 'parameters', 'query']), 'missing']);
    expect(await locs({ query: 'x', search_depth: 'deep' })).to.deep.include([JSON.stringify(['body', 'parameters', 'search_depth']), 'enum']);
    expect(await locs({ query: 'x', colour: 'red' })).to.deep.include([JSON.stringify(['body', 'parameters', 'colour']), 'extra_forbidden']);
    expect(await locs({ query: 'x', include_domains: ['ok.com', 'bad/path'] })).to.deep.include([JSON.stringify(['body', 'parameters', 'include_domains', 1]), 'string_pattern_mismatch']);
    const tts = await request(gw.app).post('/v1/tools/execute').set({ Authorization: `Bearer ${key}` })
      .send({ tool_name: 'text_to_speech', parameters: { text: 'hi', speed: 5 } });
    expect(tts.status).to.equal(422);
    expect(tts.body.detail[0].loc).to.deep.equal(['body', 'parameters', 'speed']);
  });
});

for (const dialect of DIALECTS) {
  describe(`contract: tool execution and billing on ${dialect}`, function () {
    let gw: TestGateway;
    let tavily: FakeUpstream;
    let tts: FakeUpstream;
    let mode: 'ok' | 'fail' | 'hang' = 'ok';
    const mp3 = mp3Frames(100);

    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      tavily = await startFakeUpstream((req, res) => {
        if (mode === 'hang') return; // never answers
        if (mode === 'fail') return json(res, 500, { detail: { error: 'internal' } });
        json(res, 200, { ...TAVILY_ANSWER, results: TAVILY_ANSWER.results.slice(0, JSON.parse(req.body).max_results) });
      });
      tts = await startFakeUpstream((_req, res) => {
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        res.end(mp3);
      });
      gw = await startTestGateway({ dialect, env: {
        TAVILY_API_KEY: 'tvly-test-key', TAVILY_BASE_URL: tavily.url, TTS_API_KEY: 'sk-tts-test', TTS_BASE_URL: `${tts.url}/v1`,
        TOOL_TIMEOUT_MS: '400',
      } });
    });
    after(async () => {
      await gw?.close();
      await tavily?.close();
      await tts?.close();
    });
    beforeEach(() => { mode = 'ok'; });

    const execute = (key: string, tool_name: string, parameters: unknown) =>
      request(gw.app).post('/v1/tools/execute').set({ Authorization: `Bearer ${key}` }).send({ tool_name, parameters });

    it('web_search: sends the Tavily request, returns the results, charges exactly the price once', async () => {
      const { key, userId } = await gw.newKey(1);
      const before = tavily.requests.length;
      const res = await execute(key, 'web_search', { query: 'who wrote dune', max_results: 2, include_domains: ['wikipedia.org'] });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.include({ success: true, tool_name: 'web_search', error: null, cost_usd: 0.008 });
      expect(res.body.result).to.deep.equal({
        query: 'who wrote dune', answer: 'Frank Herbert wrote Dune (1965).', results_count: 2, response_time_s: 1.67,
        results: TAVILY_ANSWER.results.map(({ title, url, content, score }) => ({ title, url, content, score })),
      });
      const seen = tavily.requests.slice(before);
      expect(seen).to.have.length(1);
      expect(seen[0].method).to.equal('POST');
      expect(seen[0].url).to.equal('/search');
      expect(seen[0].headers.authorization).to.equal('Bearer tvly-test-key');
      expect(JSON.parse(seen[0].body)).to.deep.equal({
        query: 'who wrote dune', search_depth: 'basic', max_results: 2, include_answer: true, include_raw_content: false,
        include_images: false, topic: 'general', include_domains: ['wikipedia.org'], exclude_domains: [],
      });
      expect(await gw.store.credits.balance(userId)).to.equal(1_000_000_000 - 8_000_000);
      expect(await gw.store.credits.openHoldCount(userId)).to.equal(0);
      expect(await gw.store.credits.ledgerSum(userId)).to.equal(992_000_000);
      await gw.services.recorder.flush();
      const [usage] = (await gw.store.usage.forUser(userId));
      expect(usage).to.include({ endpoint: 'tool:web_search', gateway: 'tavily', provider: 'tavily', model: 'web_search', status: 'success' });
      expect(Number(usage.cost_nano)).to.equal(8_000_000);
    });

    it('web_search: an upstream 500 is a failed execution; the hold is released and nothing is charged', async () => {
      const { key, userId } = await gw.newKey(1);
      mode = 'fail';
      const res = await execute(key, 'web_search', { query: 'dune' });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ success: false, result: null, cost_usd: 0 });
      expect(res.body.error).to.contain('web_search failed').and.contain('HTTP 500');
      expect(await gw.store.credits.balance(userId)).to.equal(1_000_000_000);
      expect(await gw.store.credits.openHoldCount(userId)).to.equal(0);
      const kinds = (await gw.store.credits.ledger(userId)).map((r) => [r.kind, r.delta_nano]);
      // a release moves no money: the ledger holds the grant alone
      expect(kinds).to.deep.equal([['grant', 1_000_000_000]]);
      await gw.services.recorder.flush();
      const [usage] = await gw.store.usage.forUser(userId);
      expect(usage).to.include({ status: 'error', error_class: 'server_error', http_status: 500 });
      expect(Number(usage.cost_nano)).to.equal(0);
    });

    it('web_search: an upstream that hangs is a timed-out execution, released', async () => {
      const { key, userId } = await gw.newKey(1);
      mode = 'hang';
      const res = await execute(key, 'web_search', { query: 'dune' });
      expect(res.status).to.equal(200);
      expect(res.body.success).to.equal(false);
      expect(res.body.error).to.match(/time/);
      expect(await gw.store.credits.balance(userId)).to.equal(1_000_000_000);
      expect(await gw.store.credits.openHoldCount(userId)).to.equal(0);
    });

    it('the admin credential runs billed tools without a charge (it has no balance)', async () => {
      const res = await request(gw.app).post('/v1/tools/execute').set({ Authorization: `Bearer ${ADMIN_KEY}` })
        .send({ tool_name: 'web_search', parameters: { query: 'dune', max_results: 1 } });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ success: true, cost_usd: 0 });
      expect(res.body.result.results_count).to.equal(1);
    });

    it('402 when the credits cannot cover the price; the upstream is not called', async () => {
      const { key, userId } = await gw.newKey(0.005); // less than one search (0.008)
      const before = tavily.requests.length;
      const res = await execute(key, 'web_search', { query: 'dune' });
      expect(res.status).to.equal(402);
      expect(res.body.error.type).to.equal('insufficient_credits');
      expect(tavily.requests.length).to.equal(before);
      expect(await gw.store.credits.balance(userId)).to.equal(5_000_000);
    });

    it('text_to_speech: OpenAI-style request, base64 audio with its duration, charged per 1,000 characters', async () => {
      const { key, userId } = await gw.newKey(1);
      const text = 'a'.repeat(2000);
      const res = await execute(key, 'text_to_speech', { text, voice: 'nova' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      // 100 MPEG-1 layer III frames of 1152 samples at 44.1 kHz = 2.612 s; 2,000 characters at $0.015 per 1,000.
      expect(res.body.result).to.deep.equal({
        audio_base64: mp3.toString('base64'), format: 'mp3', content_type: 'audio/mpeg', duration_seconds: 2.612,
        size_bytes: mp3.length, characters: 2000, voice: 'nova', speed: 1,
      });
      expect(res.body.cost_usd).to.equal(0.03);
      const seen = tts.requests.at(-1)!;
      expect(seen.url).to.equal('/v1/audio/speech');
      expect(seen.headers.authorization).to.equal('Bearer sk-tts-test');
      expect(JSON.parse(seen.body)).to.deep.equal({ model: 'tts-1', input: text, voice: 'nova', response_format: 'mp3', speed: 1 });
      expect(await gw.store.credits.balance(userId)).to.equal(970_000_000);
    });
  });
}

describe('contract: tools without a configured upstream', () => {
  let gw: TestGateway;
  before(async () => { gw = await startTestGateway(); });
  after(() => gw.close());

  it('is a failed execution naming the missing setting, with nothing held', async () => {
    const { key, userId } = await gw.newKey(1);
    const res = await request(gw.app).post('/v1/tools/execute').set({ Authorization: `Bearer ${key}` })
      .send({ tool_name: 'web_search', parameters: { query: 'dune' } });
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ success: false, result: null, cost_usd: 0 });
    expect(res.body.error).to.contain('TAVILY_API_KEY');
    expect((await gw.store.credits.ledger(userId)).map((r) => r.kind)).to.deep.equal(['grant']);
  });
});
