import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { postgresAvailable, DIALECTS } from '../support/db.js';
import { FIXTURE_DIR, FIXTURE_ENV } from '../support/catalog-fixture.js';
import { Catalog } from '../../src/catalog/catalog.js';
import { loadSeeds } from '../../src/catalog/seeds.js';
import { createLogger } from '../../src/logger.js';

/**
 * A local fake upstream speaking the four model-list shapes. OpenRouter adds a model and changes a price,
 * Groq adds a model, Anthropic pages, Gemini lists with limits, the local server needs no key, Together
 * answers 500 and OpenAI refuses the key.
 */
function fakeUpstream() {
  const seen: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];
  const state = { openrouterDown: false };
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const url = new URL(req.url ?? '/', 'http://x');
    switch (url.pathname) {
      case '/openrouter/api/v1/models':
        if (state.openrouterDown) return json(503, { error: { message: 'overloaded' } });
        return json(200, { data: [
          { id: 'meta-llama/llama-3.3-70b-instruct', name: 'Meta: Llama 3.3 70B Instruct', context_length: 131072,
            pricing: { prompt: '0.00000012', completion: '0.0000003' } },
          { id: 'mistralai/mistral-small-3.2-24b-instruct', name: 'Mistral Small 3.2 24B', description: 'A small Mistral model.',
            context_length: 128000, pricing: { prompt: '0.00000005', completion: '0.0000001' },
            architecture: { input_modalities: ['text', 'image'], output_modalities: ['text'] },
            top_provider: { context_length: 128000, max_completion_tokens: 32000 }, supported_parameters: ['tools', 'response_format'] },
          { id: 'openrouter/auto', name: 'Auto Router', context_length: 2000000, pricing: { prompt: '-1', completion: '-1' } },
        ] });
      case '/groq/openai/v1/models':
        return json(200, { object: 'list', data: [
          { id: 'llama-3.3-70b-versatile', object: 'model', owned_by: 'Meta', context_window: 131072 },
          { id: 'openai/gpt-oss-120b', object: 'model', owned_by: 'OpenAI', context_window: 131072 },
        ] });
      case '/together/v1/models':
        return json(500, { error: { message: 'internal boom' } });
      case '/openai/v1/models':
        return json(401, { error: { message: 'Incorrect API key provided: sk-test-openai' } });
      case '/anthropic/v1/models':
        return url.searchParams.get('after_id') === 'claude-sonnet-4-5'
          ? json(200, { data: [{ type: 'model', id: 'claude-opus-4-1-20250805', display_name: 'Claude Opus 4.1' }], has_more: false, last_id: 'claude-opus-4-1-20250805' })
          : json(200, { data: [{ type: 'model', id: 'claude-sonnet-4-5', display_name: 'Claude Sonnet 4.5' }], has_more: true, last_id: 'claude-sonnet-4-5' });
      case '/google/v1beta/models':
        return json(200, { models: [{ name: 'models/gemini-2.5-flash', displayName: 'Gemini 2.5 Flash', description: 'Fast Gemini.',
          inputTokenLimit: 1048576, outputTokenLimit: 65536, supportedGenerationMethods: ['generateContent'], thinking: true }] });
      case '/local/v1/models':
        return json(200, { object: 'list', data: [{ id: 'llama3.2:3b', object: 'model', owned_by: 'library' }] });
      default:
        return json(404, { error: { message: 'no such path' } });
    }
  });
  return { server, seen, state };
}

for (const dialect of DIALECTS) {
  describe(`catalog discovery against a local upstream (${dialect})`, function () {
    let gw: TestGateway;
    let fake: ReturnType<typeof fakeUpstream>;
    let base: string;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      fake = fakeUpstream();
      await new Promise<void>((r) => fake.server.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
      gw = await startTestGateway({
        dialect,
        env: {
          ...FIXTURE_ENV,
          OPENROUTER_BASE_URL: `${base}/openrouter/api/v1`, GROQ_BASE_URL: `${base}/groq/openai/v1`,
          TOGETHER_BASE_URL: `${base}/together/v1`, OPENAI_BASE_URL: `${base}/openai/v1`,
          ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: `${base}/anthropic`,
          GOOGLE_API_KEY: 'goog-test', GOOGLE_BASE_URL: `${base}/google`,
          LOCAL_BASE_URL: `${base}/local/v1`,
        },
      });
    });
    after(async () => {
      await gw?.close();
      fake?.server.close();
    });

    const get = (url: string) => request(gw.app).get(url);

    it('answers from seeds before any sync', async () => {
      expect((await get('/v1/models/mistralai/mistral-small-3.2-24b-instruct')).status).to.equal(404);
      const status = await get('/v1/gateways/status');
      expect(status.body.gateways.every((g: any) => g.last_sync === null && g.cache_age_seconds === null)).to.equal(true);
    });

    it('syncs every configured gateway with its own wire format and headers', async () => {
      const results = await gw.services.catalog.syncNow();
      expect(Object.fromEntries(results.map((r) => [r.gateway, r.ok]))).to.deep.equal({
        anthropic: true, google: true, groq: true, local: true, openai: false, openrouter: true, together: false,
      });
      const hit = (p: string) => fake.seen.filter((s) => s.url.startsWith(p));
      expect(hit('/openrouter/')[0].headers.authorization).to.equal('Bearer sk-test-openrouter');
      expect(hit('/anthropic/').map((s) => s.url)).to.deep.equal(['/anthropic/v1/models?limit=1000', '/anthropic/v1/models?limit=1000&after_id=claude-sonnet-4-5']);
      expect(hit('/anthropic/')[0].headers).to.include({ 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' });
      expect(hit('/google/')[0].headers['x-goog-api-key']).to.equal('goog-test');
      expect(hit('/local/')[0].headers.authorization).to.equal(undefined);
    });

    it('a new model appears, with what the upstream published', async () => {
      const res = await get('/v1/models/mistralai/mistral-small-3.2-24b-instruct');
      expect(res.status).to.equal(200);
      expect(res.body.model).to.deep.include({ gateway: 'openrouter', name: 'Mistral Small 3.2 24B', description: 'A small Mistral model.',
        context_length: 128000, max_output_tokens: 32000, is_active: true, is_private: false });
      expect(res.body.model.pricing).to.include({ prompt: '0.00000005', completion: '0.0000001' });
      expect(res.body.model.modalities).to.deep.equal({ input: ['text', 'image'], output: ['text'] });
      expect(res.body.model.capabilities).to.deep.equal({ tools: true, vision: true, reasoning: false, json_mode: true, streaming: true });
      const gemini = (await get('/v1/models/google/gemini-2.5-flash')).body.model;
      expect(gemini).to.include({ gateway: 'google', context_length: 1048576, max_output_tokens: 65536 });
      expect(gemini.capabilities.reasoning).to.equal(true);
      expect((await get('/v1/models/anthropic/claude-opus-4.1-20250805')).body.model).to.include({ name: 'Claude Opus 4.1', gateway: 'anthropic' });
      const groq = (await get('/v1/models/openai/gpt-oss-120b')).body.model;
      expect(groq).to.include({ gateway: 'groq', context_length: 131072 });
      expect(groq.pricing.prompt).to.equal(null);
      // OpenRouter's "-1" (variable price) is an unknown price, not a negative one
      expect((await get('/v1/models/openrouter/auto')).body.model.pricing.prompt).to.equal(null);
    });

    it('a changed price replaces the seed price; the router sees both changes', async () => {
      const cmp = await get('/v1/models/meta-llama/llama-3.3-70b-instruct/compare?gateways=openrouter');
      expect(cmp.body.gateways[0].pricing).to.include({ prompt: '0.00000012', completion: '0.0000003' });
      // blended: free 0, mistral-small (3×5e-8 + 1e-7)/4 = 6.25e-8, llama@openrouter (3×1.2e-7 + 3e-7)/4 = 1.65e-7
      const route = gw.services.catalog.resolve('router:cheapest').slice(0, 3).map((o) => o.upstreamModel);
      expect(route).to.deep.equal(['meta-llama/llama-3.3-70b-instruct:free', 'mistralai/mistral-small-3.2-24b-instruct', 'meta-llama/llama-3.3-70b-instruct']);
    });

    it('local models are private; seed offers an upstream no longer lists stay', async () => {
      const priv = await get('/v1/models?is_private=true');
      expect(priv.body.models.map((m: any) => `${m.id}@${m.gateway}`)).to.deep.equal(['meta-llama/llama3.2:3b@local']);
      expect((await get('/v1/models/openai/whisper-large-v3')).body.model.gateway).to.equal('groq');
    });

    it('gateways/status: synced age and count, and failures with a sanitised message while the catalog answers', async () => {
      const res = await get('/v1/gateways/status');
      const rows = Object.fromEntries(res.body.gateways.map((g: any) => [g.gateway, g]));
      expect(rows.openrouter).to.include({ cached_models: 6, last_error: null }); // 4 seed offers + 2 listed new ones
      expect(rows.openrouter.cache_age_seconds).to.be.a('number').and.at.least(0).and.below(60);
      expect(Date.parse(rows.openrouter.last_sync)).to.be.closeTo(Date.now(), 60_000);
      expect(rows.together).to.include({ cached_models: 2, last_sync: null, cache_age_seconds: null,
        last_error: 'upstream error (upstream HTTP 500): internal boom' });
      expect(rows.openai.last_error).to.equal("upstream refused the gateway's provider credentials (HTTP 401)");
      expect(JSON.stringify(res.body)).to.not.contain('sk-test');
      const together = await get('/v1/models?gateway=together');
      expect(together.body.total).to.equal(2);
    });

    it('persists the lists: a restarted catalog serves them offline; a failed re-sync serves them stale', async () => {
      const stored = await gw.store.catalog.offers();
      expect(stored.filter((r) => r.gateway === 'openrouter').map((r) => [r.upstream_model, r.prompt_price])).to.deep.equal([
        ['meta-llama/llama-3.3-70b-instruct', '0.00000012'], ['mistralai/mistral-small-3.2-24b-instruct', '0.00000005'], ['openrouter/auto', null]]);
      const state = Object.fromEntries((await gw.store.catalog.syncState()).map((s) => [s.gateway, s]));
      expect(Number(state.openrouter.model_count)).to.equal(3);
      expect(state.together.last_sync).to.equal(null);

      const restarted = new Catalog({ config: gw.config, logger: createLogger('silent'), store: gw.store, seeds: loadSeeds(FIXTURE_DIR) });
      await restarted.start();
      expect(restarted.resolve('mistralai/mistral-small-3.2-24b-instruct').map((o) => o.gateway)).to.deep.equal(['openrouter']);
      const before = restarted.gatewaysStatus().gateways.find((g) => g.gateway === 'openrouter')!;
      expect(before.last_sync).to.equal((await get('/v1/gateways/status')).body.gateways.find((g: any) => g.gateway === 'openrouter').last_sync);

      fake.state.openrouterDown = true;
      const [result] = await restarted.syncNow(['openrouter']);
      expect(result).to.deep.include({ gateway: 'openrouter', ok: false });
      const after = restarted.gatewaysStatus().gateways.find((g) => g.gateway === 'openrouter')!;
      expect(after).to.include({ last_sync: before.last_sync, last_error: 'upstream error (upstream HTTP 503): overloaded' });
      expect(restarted.resolve('mistralai/mistral-small-3.2-24b-instruct')).to.have.length(1);
      await restarted.stop();
      fake.state.openrouterDown = false;
    });
  });
}
