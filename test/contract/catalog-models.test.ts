import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { FIXTURE_ENV, recordFixtureHealth } from '../support/catalog-fixture.js';

/**
 * The model operations over the small fixture catalog (test/fixtures/catalog), with measured health and usage
 * recorded first. Every expected value is worked out by hand from the fixture's numbers (see the comments).
 */
describe('catalog: model operations on the fixture catalog', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ env: FIXTURE_ENV });
    await recordFixtureHealth(gw);
  });
  after(() => gw.close());

  const get = (url: string) => request(gw.app).get(url);
  const ids = (models: any[]) => models.map((m) => `${m.id}@${m.gateway}`);

  describe('GET /v1/models', () => {
    it('lists active offers by id then gateway; pages of 5 lose and repeat nothing', async () => {
      const pages = [];
      for (const offset of [0, 5, 10]) {
        const res = await get(`/v1/models?limit=5&offset=${offset}`);
        expect(res.status).to.equal(200);
        expect(res.body).to.include({ total: 12, limit: 5, offset, gateway: 'all', object: 'list' });
        pages.push(...ids(res.body.models));
        expect(res.body.data.map((d: any) => d.id)).to.deep.equal(res.body.models.map((m: any) => m.id));
      }
      // 13 offers, claude-3-haiku is inactive
      expect(pages).to.deep.equal([
        'anthropic/claude-sonnet-4.5@anthropic', 'anthropic/claude-sonnet-4.5@openrouter',
        'meta-llama/llama-3.3-70b-instruct@groq', 'meta-llama/llama-3.3-70b-instruct@openrouter',
        'meta-llama/llama-3.3-70b-instruct@together', 'meta-llama/llama-3.3-70b-instruct:free@openrouter',
        'openai/gpt-4o@openai', 'openai/gpt-4o@openrouter', 'openai/gpt-4o-mini@openai', 'openai/gpt-5-codex@openai',
        'openai/whisper-large-v3@groq', 'qwen/qwen3-coder-480b-a35b-instruct@together',
      ]);
    });

    it('shows prices as per-token decimal strings and the OpenAI list item with the release date', async () => {
      const res = await get('/v1/models?provider=OpenAI&gateway=openai');
      expect(res.body.total).to.equal(3);
      const gpt4o = res.body.models[0];
      expect(gpt4o).to.deep.include({ id: 'openai/gpt-4o', gateway: 'openai', gateway_model_id: 'gpt-4o', context_length: 128000, health_status: 'healthy', average_response_time_ms: 700 });
      expect(gpt4o.pricing).to.deep.equal({ prompt: '0.0000025', completion: '0.00001', cache_read: null, cache_write: null, image: null, audio_per_minute: null });
      expect(gpt4o).to.not.have.property('hub');
      expect(res.body.data[0]).to.deep.equal({ id: 'openai/gpt-4o', object: 'model', created: 1715558400, owned_by: 'openai' });
    });

    it('filters by provider and gateway alias; an unknown gateway is 404', async () => {
      const openai = await get('/v1/models?provider=openai');
      expect(openai.body.total).to.equal(5);
      const together = await get('/v1/models?gateway=togetherai');
      expect(together.body.gateway).to.equal('together');
      expect(ids(together.body.models)).to.deep.equal(['meta-llama/llama-3.3-70b-instruct@together', 'qwen/qwen3-coder-480b-a35b-instruct@together']);
      const bad = await get('/v1/models?gateway=nowhere');
      expect(bad.status).to.equal(404);
      expect(bad.body.error.type).to.equal('not_found_error');
    });

    it('unique_models: one record per model, top level = cheapest blended offer, providers cheapest prompt first', async () => {
      const res = await get('/v1/models?unique_models=true&provider=openai&include_hub=true');
      expect(res.body.total).to.equal(4);
      const gpt4o = res.body.models.find((m: any) => m.id === 'openai/gpt-4o');
      // blended: openai (3×2.5e-6 + 1e-5)/4 = 4.375e-6 < openrouter (3×2.4e-6 + 1.1e-5)/4 = 4.55e-6
      expect(gpt4o.gateway).to.equal('openai');
      expect(gpt4o.hub).to.equal(null);
      expect(gpt4o.providers.map((p: any) => p.slug)).to.deep.equal(['openrouter', 'openai']); // prompt 2.4e-6 < 2.5e-6
      const ignored = await get('/v1/models?unique_models=true&gateway=openrouter');
      expect(ignored.body.models[0]).to.not.have.property('providers');
    });
  });

  describe('GET /v1/models/search', () => {
    it('q matches id, name, developer; sorted by prompt price both ways', async () => {
      const asc = await get('/v1/models/search?q=LLAMA');
      expect(asc.body.total).to.equal(4);
      expect(asc.body.models.map((m: any) => m.pricing.prompt)).to.deep.equal(['0', '0.0000001', '0.00000059', '0.00000088']);
      const desc = await get('/v1/models/search?q=llama&order=desc');
      expect(ids(desc.body.models)).to.deep.equal(['meta-llama/llama-3.3-70b-instruct@together', 'meta-llama/llama-3.3-70b-instruct@groq',
        'meta-llama/llama-3.3-70b-instruct@openrouter', 'meta-llama/llama-3.3-70b-instruct:free@openrouter']);
      expect(desc.body.filters).to.deep.equal({ q: 'llama', modality: null, is_private: null, min_context: null, max_context: null,
        min_price: null, max_price: null, gateway: 'all', sort_by: 'price', order: 'desc' });
    });

    it('price bounds are inclusive; unknown prices never match a bound', async () => {
      const res = await get('/v1/models/search?min_price=0.0000005&max_price=0.000003&limit=100');
      expect(ids(res.body.models)).to.deep.equal(['meta-llama/llama-3.3-70b-instruct@groq', 'meta-llama/llama-3.3-70b-instruct@together',
        'openai/gpt-4o@openrouter', 'openai/gpt-4o@openai', 'anthropic/claude-sonnet-4.5@anthropic', 'anthropic/claude-sonnet-4.5@openrouter']);
      const none = await get('/v1/models/search?min_price=0.00001&max_price=0.000001');
      expect(none.body.total).to.equal(0);
    });

    it('modality, context bounds and sort by context (unknown last)', async () => {
      expect(ids((await get('/v1/models/search?modality=audio')).body.models)).to.deep.equal(['openai/whisper-large-v3@groq']);
      expect((await get('/v1/models/search?modality=multimodal')).body.total).to.equal(5);
      const ctx = await get('/v1/models/search?min_context=200000&sort_by=context&order=desc');
      expect(ids(ctx.body.models)).to.deep.equal(['qwen/qwen3-coder-480b-a35b-instruct@together',
        'anthropic/claude-sonnet-4.5@anthropic', 'anthropic/claude-sonnet-4.5@openrouter']);
      const all = await get('/v1/models/search?sort_by=context&order=desc&limit=100');
      expect(ids(all.body.models).slice(-2)).to.deep.equal(['openai/gpt-5-codex@openai', 'openai/whisper-large-v3@groq']);
    });

    it('sorts by popularity: requests of the last 7 days per model, all gateways together', async () => {
      const res = await get('/v1/models/search?sort_by=popularity&order=desc&limit=5');
      // 3 recorded requests for the llama model (via groq), 1 for gpt-4o
      expect(ids(res.body.models)).to.deep.equal(['meta-llama/llama-3.3-70b-instruct@groq', 'meta-llama/llama-3.3-70b-instruct@openrouter',
        'meta-llama/llama-3.3-70b-instruct@together', 'openai/gpt-4o@openai', 'openai/gpt-4o@openrouter']);
    });
  });

  describe('GET /v1/models/unique', () => {
    it('pages by provider_count desc, ties by id; no model lost or repeated', async () => {
      const seen: string[] = [];
      for (const offset of [0, 3, 6]) {
        const res = await get(`/v1/models/unique?limit=3&offset=${offset}`);
        expect(res.body.total).to.equal(8);
        seen.push(...res.body.models.map((m: any) => `${m.id}:${m.provider_count}`));
      }
      expect(seen).to.deep.equal(['meta-llama/llama-3.3-70b-instruct:3', 'anthropic/claude-sonnet-4.5:2', 'openai/gpt-4o:2',
        'meta-llama/llama-3.3-70b-instruct:free:1', 'openai/gpt-4o-mini:1', 'openai/gpt-5-codex:1', 'openai/whisper-large-v3:1',
        'qwen/qwen3-coder-480b-a35b-instruct:1']);
    });

    it('cheapest provider by prompt price and fastest by measured latency', async () => {
      const res = await get('/v1/models/unique?min_providers=2');
      expect(res.body.total).to.equal(3);
      const gpt4o = res.body.models.find((m: any) => m.id === 'openai/gpt-4o');
      expect(gpt4o).to.deep.include({ cheapest_provider: 'openrouter', cheapest_prompt_price: 0.0000024, fastest_provider: 'openrouter', fastest_response_time: 100 });
      const llama = res.body.models.find((m: any) => m.id === 'meta-llama/llama-3.3-70b-instruct');
      expect(llama).to.deep.include({ cheapest_provider: 'openrouter', cheapest_prompt_price: 0.0000001, fastest_provider: 'groq', fastest_response_time: 90 });
      expect(llama.providers.map((p: any) => p.slug)).to.deep.equal(['openrouter', 'groq', 'together']);
    });

    it('sorts by cheapest price, unknown prices last in both orders; include_inactive adds the deprecated model', async () => {
      const asc = await get('/v1/models/unique?sort_by=cheapest_price&order=asc');
      expect(asc.body.models.map((m: any) => m.id)).to.deep.equal(['meta-llama/llama-3.3-70b-instruct:free', 'meta-llama/llama-3.3-70b-instruct',
        'openai/gpt-4o-mini', 'qwen/qwen3-coder-480b-a35b-instruct', 'openai/gpt-4o', 'anthropic/claude-sonnet-4.5', 'openai/gpt-5-codex', 'openai/whisper-large-v3']);
      const desc = await get('/v1/models/unique?sort_by=cheapest_price&order=desc');
      expect(desc.body.models.map((m: any) => m.id).slice(0, 2)).to.deep.equal(['anthropic/claude-sonnet-4.5', 'openai/gpt-4o']);
      expect(desc.body.models.map((m: any) => m.id).slice(-2)).to.deep.equal(['openai/gpt-5-codex', 'openai/whisper-large-v3']);
      expect((await get('/v1/models/unique?include_inactive=true')).body.total).to.equal(9);
    });
  });

  describe('GET /v1/models/by-category/{category}', () => {
    const cat = async (c: string, q = '') => {
      const res = await get(`/v1/models/by-category/${c}${q}`);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return ids(res.body.models);
    };
    it('price tiers: free, cheapest (lowest 10% of 10 paid offers = 1), budget, mid (5e-7 boundary), flagship', async () => {
      expect(await cat('free')).to.deep.equal(['meta-llama/llama-3.3-70b-instruct:free@openrouter']);
      expect(await cat('cheapest')).to.deep.equal(['meta-llama/llama-3.3-70b-instruct@openrouter']); // blended 1.55e-7
      expect(await cat('budget')).to.deep.equal(['meta-llama/llama-3.3-70b-instruct@openrouter', 'openai/gpt-4o-mini@openai']);
      expect(await cat('mid')).to.deep.equal(['meta-llama/llama-3.3-70b-instruct@groq', 'qwen/qwen3-coder-480b-a35b-instruct@together',
        'meta-llama/llama-3.3-70b-instruct@together']); // 6.4e-7, 7e-7, 8.8e-7
      // claude-3-haiku: (3×2.5e-7 + 1.25e-6)/4 = 5e-7 exactly, the lower bound of mid; it is inactive
      expect((await cat('mid', '?include_inactive=true'))[0]).to.equal('anthropic/claude-3-haiku-20240307@anthropic');
      expect(await cat('flagship')).to.deep.equal(['openai/gpt-4o@openai', 'openai/gpt-4o@openrouter',
        'anthropic/claude-sonnet-4.5@anthropic', 'anthropic/claude-sonnet-4.5@openrouter']);
    });

    it('context: largest is the top 10% with ties (200000 shared by three offers), long-context >= 128000', async () => {
      expect(await cat('largest')).to.deep.equal(['qwen/qwen3-coder-480b-a35b-instruct@together', 'anthropic/claude-sonnet-4.5@anthropic', 'anthropic/claude-sonnet-4.5@openrouter']);
      expect(await cat('largest', '?include_inactive=true')).to.deep.equal(['qwen/qwen3-coder-480b-a35b-instruct@together',
        'anthropic/claude-3-haiku-20240307@anthropic', 'anthropic/claude-sonnet-4.5@anthropic', 'anthropic/claude-sonnet-4.5@openrouter']);
      const long = await get('/v1/models/by-category/long-context?limit=4');
      expect(long.body).to.include({ total: 9, limit: 4, category: 'long-context' });
      expect(long.body.models.map((m: any) => m.context_length)).to.deep.equal([262144, 200000, 200000, 131072]);
    });

    it('quality: smartest (top decile of 11 scores = 90), balanced (score > median 60 and price < median 7.9e-7)', async () => {
      expect(await cat('smartest')).to.deep.equal(['anthropic/claude-sonnet-4.5@anthropic', 'anthropic/claude-sonnet-4.5@openrouter']);
      expect(await cat('balanced')).to.deep.equal(['qwen/qwen3-coder-480b-a35b-instruct@together']);
    });

    it('capabilities and names: reasoning, vision (by score), coding (coder and codex)', async () => {
      expect(await cat('reasoning')).to.deep.equal(['anthropic/claude-sonnet-4.5@anthropic', 'anthropic/claude-sonnet-4.5@openrouter']);
      expect(await cat('vision')).to.deep.equal(['anthropic/claude-sonnet-4.5@anthropic', 'anthropic/claude-sonnet-4.5@openrouter',
        'openai/gpt-4o@openai', 'openai/gpt-4o@openrouter', 'openai/gpt-4o-mini@openai']);
      expect(await cat('coding')).to.deep.equal(['qwen/qwen3-coder-480b-a35b-instruct@together', 'openai/gpt-5-codex@openai']);
    });

    it('fastest: measured under 500 ms (or the fastest 10%), fastest first; records list their tags', async () => {
      expect(await cat('fastest')).to.deep.equal(['openai/gpt-4o-mini@openai', 'meta-llama/llama-3.3-70b-instruct@groq', 'openai/gpt-4o@openrouter']);
      const res = await get('/v1/models/by-category/budget');
      expect(res.body.models[1].categories).to.deep.equal(['fastest', 'vision', 'long-context', 'budget']);
    });

    it('an unknown category and a limit over 1000 fail validation (422)', async () => {
      const res = await get('/v1/models/by-category/expensive');
      expect(res.status).to.equal(422);
      expect(res.body.detail[0].loc).to.deep.equal(['path', 'category']);
      expect(res.body.detail[0].msg).to.contain('long-context');
      expect((await get('/v1/models/by-category/free?limit=1001')).status).to.equal(422);
    });
  });

  describe('GET /v1/models/low-latency', () => {
    it('lists measured offers under 500 ms with tiers, and fast alternatives per family', async () => {
      const res = await get('/v1/models/low-latency');
      expect(res.body.models.map((m: any) => [m.gateway, m.average_response_time_ms, m.latency_tier])).to.deep.equal([
        ['openai', 50, 'ultra'], ['groq', 90, 'ultra'], ['openrouter', 100, 'low']]);
      expect(res.body.alternatives).to.deep.equal([
        { family: 'gpt', slow_model: 'openai/gpt-4o', fast_alternatives: ['openai/gpt-4o-mini', 'openai/gpt-4o'] },
        { family: 'llama', slow_model: 'meta-llama/llama-3.3-70b-instruct', fast_alternatives: ['meta-llama/llama-3.3-70b-instruct'] },
      ]);
      const ultra = await get('/v1/models/low-latency?include_ultra_only=true&include_alternatives=false&limit=1&offset=1');
      expect(ultra.body).to.include({ total: 2, limit: 1, offset: 1 });
      expect(ultra.body).to.not.have.property('alternatives');
      expect(ultra.body.models[0].gateway).to.equal('groq');
    });
  });

  describe('POST /v1/models/batch-compare', () => {
    const url = '/v1/models/batch-compare?model_ids=openai/gpt-4o&model_ids=meta-llama/llama-3.3-70b-instruct&model_ids=nope/none&model_ids=openai/gpt-4o';
    it('compares by price: cheapest blended offer, largest context, availability; duplicates removed', async () => {
      const res = await request(gw.app).post(url);
      expect(res.status).to.equal(200);
      expect(res.body.best).to.equal('meta-llama/llama-3.3-70b-instruct');
      expect(res.body.models).to.deep.equal([
        { model_id: 'openai/gpt-4o', found: true, name: 'GPT-4o', offers: 2, cheapest_gateway: 'openai', prompt_price: '0.0000025',
          completion_price: '0.00001', context_length: 128000, availability: 0.5, rank: 2 },
        { model_id: 'meta-llama/llama-3.3-70b-instruct', found: true, name: 'Llama 3.3 70B', offers: 3, cheapest_gateway: 'openrouter',
          prompt_price: '0.0000001', completion_price: '0.00000032', context_length: 131072, availability: 1, rank: 1 },
        { model_id: 'nope/none', found: false, name: null, offers: 0, cheapest_gateway: null, prompt_price: null, completion_price: null,
          context_length: null, availability: null, rank: null },
      ]);
    });
    it('ranks by availability; missing model_ids is 422', async () => {
      const res = await request(gw.app).post(`${url}&criteria=availability`);
      expect(res.body.models.map((m: any) => m.rank)).to.deep.equal([2, 1, null]);
      const bad = await request(gw.app).post('/v1/models/batch-compare');
      expect(bad.status).to.equal(422);
      expect(bad.body.detail[0].loc).to.deep.equal(['query', 'model_ids']);
    });
  });
});
