import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { FIXTURE_ENV, recordFixtureHealth } from '../support/catalog-fixture.js';

/** Routers, gateways, providers, one-model operations and resolve() over the fixture catalog. */
describe('catalog: routers, gateways, providers and single models', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ env: FIXTURE_ENV });
    await recordFixtureHealth(gw);
  });
  afterEach(() => gw.services.catalog.setBreakerState(() => 'closed'));
  after(() => gw.close());

  const get = (url: string) => request(gw.app).get(url);
  const route = (model: string) => gw.services.catalog.resolve(model).map((o) => `${o.gateway}:${o.upstreamModel}`);

  describe('resolve(): every id form and router ordering', () => {
    it('canonical, gateway/model (id or alias), bare upstream and bare model ids; unknown is empty', () => {
      // plain ids are ordered like router:cheapest: openrouter 1.55e-7 < groq 6.4e-7 < together 8.8e-7 (blended)
      const llama = ['openrouter:meta-llama/llama-3.3-70b-instruct', 'groq:llama-3.3-70b-versatile', 'together:meta-llama/Llama-3.3-70B-Instruct-Turbo'];
      expect(route('meta-llama/llama-3.3-70b-instruct')).to.deep.equal(llama);
      expect(route('llama-3.3-70b-versatile')).to.deep.equal(llama);
      expect(route('groq/llama-3.3-70b-versatile')).to.deep.equal(['groq:llama-3.3-70b-versatile']);
      expect(route('togetherai/meta-llama/llama-3.3-70b-instruct')).to.deep.equal(['together:meta-llama/Llama-3.3-70B-Instruct-Turbo']);
      expect(route('openrouter/openai/gpt-4o')).to.deep.equal(['openrouter:openai/gpt-4o']);
      expect(route('gpt-4o')).to.deep.equal(['openai:gpt-4o', 'openrouter:openai/gpt-4o']);
      expect(route('qwen3-coder-480b-a35b-instruct-fp8')).to.deep.equal(['together:Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8']);
      expect(route('no-such-model')).to.deep.equal([]);
    });

    it('configured gateways first: anthropic has no key, so claude goes to openrouter first', () => {
      expect(route('anthropic/claude-sonnet-4.5')).to.deep.equal(['openrouter:anthropic/claude-sonnet-4.5', 'anthropic:claude-sonnet-4-5']);
    });

    it('router:<mode>/<model> orders one model\'s offers by the mode', () => {
      // fastest: groq 90 ms, together 700 ms, openrouter unmeasured
      expect(route('router:fastest/meta-llama/llama-3.3-70b-instruct')).to.deep.equal(['groq:llama-3.3-70b-versatile',
        'together:meta-llama/Llama-3.3-70B-Instruct-Turbo', 'openrouter:meta-llama/llama-3.3-70b-instruct']);
      // balanced: (price rank + latency rank)/2 = openrouter (0 + 0.5)/2, groq (0.5 + 0)/2, together (1 + 1)/2; tie → cheaper
      expect(route('router:balanced/meta-llama/llama-3.3-70b-instruct')).to.deep.equal(['openrouter:meta-llama/llama-3.3-70b-instruct',
        'groq:llama-3.3-70b-versatile', 'together:meta-llama/Llama-3.3-70B-Instruct-Turbo']);
      // reliable: groq and together 100 % (tie → cheaper groq), openrouter unmeasured (0.5)
      expect(route('router:reliable/llama-3.3-70b-versatile')).to.deep.equal(['groq:llama-3.3-70b-versatile',
        'together:meta-llama/Llama-3.3-70B-Instruct-Turbo', 'openrouter:meta-llama/llama-3.3-70b-instruct']);
      // health before speed: openrouter (100 ms) is degraded, openai (700 ms) healthy
      expect(route('router:speed/openai/gpt-4o')).to.deep.equal(['openai:gpt-4o', 'openrouter:openai/gpt-4o']);
    });

    it('router:<mode> alone: chat models of configured gateways, degraded last; aliases; unknown router is empty', () => {
      const cheapest = [
        'openrouter:meta-llama/llama-3.3-70b-instruct:free', 'openrouter:meta-llama/llama-3.3-70b-instruct', 'openai:gpt-4o-mini',
        'groq:llama-3.3-70b-versatile', 'together:Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8', 'together:meta-llama/Llama-3.3-70B-Instruct-Turbo',
        'openai:gpt-4o', 'openrouter:anthropic/claude-sonnet-4.5', 'openai:gpt-5-codex', 'openrouter:openai/gpt-4o',
      ];
      expect(route('router:cheapest')).to.deep.equal(cheapest);
      expect(route('router:cheap')).to.deep.equal(cheapest);
      expect(route('router:COST')).to.deep.equal(cheapest);
      expect(route('router:fastest').slice(0, 3)).to.deep.equal(['openai:gpt-4o-mini', 'groq:llama-3.3-70b-versatile', 'together:meta-llama/Llama-3.3-70B-Instruct-Turbo']);
      expect(route('router:nope')).to.deep.equal([]);
      expect(route('router:cheapest/nope')).to.deep.equal([]);
    });

    it('isConfigured and upstream(): key from <ID>_API_KEY, base URL from the seed', () => {
      const c = gw.services.catalog;
      expect(c.isConfigured('groq')).to.equal(true);
      expect(c.isConfigured('anthropic')).to.equal(false);
      expect(c.isConfigured('local')).to.equal(false);
      expect(c.upstream('groq')).to.deep.equal({ baseUrl: 'https://api.groq.com/openai/v1', apiKey: 'gsk-test' });
      expect(c.upstream('togetherai')?.baseUrl).to.equal('https://api.together.xyz/v1');
      expect(c.upstream('anthropic')).to.equal(undefined);
    });
  });

  describe('GET /v1/routers, /v1/gateways, /v1/gateways/status', () => {
    it('lists the routers with their syntax and aliases', async () => {
      const res = await get('/v1/routers');
      expect(res.status).to.equal(200);
      expect(res.body.count).to.equal(4);
      expect(res.body.routers.map((r: any) => r.id)).to.deep.equal(['cheapest', 'fastest', 'balanced', 'reliable']);
      expect(res.body.routers[0].syntax.primary).to.equal('router:cheapest[/<model>]');
      expect(res.body.routers[0].syntax.aliases).to.include('router:cheap[/<model>]');
      expect(res.body.routers[2].syntax.aliases).to.include('router:auto[/<model>]');
    });

    it('lists gateways fast first then by id, with configured flags and aliases', async () => {
      const res = await get('/v1/gateways');
      expect(res.body.gateways.map((g: any) => `${g.id}:${g.priority}:${g.configured}`)).to.deep.equal([
        'anthropic:fast:false', 'google:fast:false', 'groq:fast:true', 'local:fast:false', 'openai:fast:true', 'openrouter:fast:true', 'together:slow:true']);
      const google = res.body.gateways[1];
      expect(google).to.deep.include({ name: 'Google AI Studio', wire_format: 'gemini', color: 'bg-blue-500', site_url: 'https://ai.google.dev' });
      expect(google.aliases).to.include('gemini');
    });

    it('status: breaker state from the engine, active model count, never synced', async () => {
      gw.services.catalog.setBreakerState((g) => (g === 'groq' ? 'open' : g === 'openai' ? 'half_open' : 'closed'));
      const res = await get('/v1/gateways/status');
      const rows = Object.fromEntries(res.body.gateways.map((g: any) => [g.gateway, g]));
      expect(rows.groq).to.deep.equal({ gateway: 'groq', configured: true, error_state: true, breaker_state: 'open', cached_models: 2,
        cache_age_seconds: null, last_sync: null, last_error: null });
      expect(rows.openai).to.include({ error_state: false, breaker_state: 'half_open', cached_models: 3 });
      expect(rows.anthropic.cached_models).to.equal(1); // claude-3-haiku is inactive
      expect(rows.local.cached_models).to.equal(0);
    });
  });

  describe('GET /v1/provider', () => {
    it('counts distinct active models per developer, sorted by count then slug, paged', async () => {
      const res = await get('/v1/provider');
      expect(res.body.providers.map((p: any) => `${p.slug}:${p.model_count}`)).to.deep.equal(['openai:4', 'meta-llama:2', 'anthropic:1', 'qwen:1']);
      expect(res.body.providers[0]).to.deep.include({ name: 'OpenAI', moderated: true, gateways: ['groq', 'openai', 'openrouter'] });
      const page = await get('/v1/provider?offset=1&limit=2');
      expect(page.body).to.include({ total: 4, offset: 1, limit: 2 });
      expect(page.body.providers.map((p: any) => p.slug)).to.deep.equal(['meta-llama', 'anthropic']);
    });
    it('filters by gateway and moderation; an unknown gateway is 404', async () => {
      const groq = await get('/v1/provider?gateway=groq');
      expect(groq.body.providers.map((p: any) => `${p.slug}:${p.model_count}:${p.gateways.join(',')}`)).to.deep.equal(['meta-llama:1:groq', 'openai:1:groq']);
      const moderated = await get('/v1/provider?moderated_only=true');
      expect(moderated.body.providers.map((p: any) => p.slug)).to.deep.equal(['openai', 'anthropic']);
      expect((await get('/v1/provider?gateway=nope')).status).to.equal(404);
    });
  });

  describe('one model: compare, get, developer', () => {
    it('compares a model across gateways: cheapest blended first, savings in percent', async () => {
      const res = await get('/v1/models/meta-llama/llama-3.3-70b-instruct/compare');
      expect(res.body.gateways.map((g: any) => g.gateway)).to.deep.equal(['openrouter', 'groq', 'together']);
      // (8.8e-7 − 1.55e-7) / 8.8e-7 × 100 = 82.386… → 82.39
      expect(res.body).to.include({ cheapest_gateway: 'openrouter', most_expensive_gateway: 'together', savings_percent: 82.39 });
      const claude = await get('/v1/models/anthropic/claude-sonnet-4.5/compare');
      expect(claude.body.gateways.map((g: any) => `${g.gateway}:${g.available}:${g.health_status}`)).to.deep.equal(['anthropic:false:unhealthy', 'openrouter:true:unknown']);
      expect(claude.body.savings_percent).to.equal(0);
    });
    it('compare with a gateway list (aliases allowed); 404 for an unknown gateway or model', async () => {
      const one = await get('/v1/models/meta-llama/llama-3.3-70b-instruct/compare?gateways=groq,togetherai');
      expect(one.body.gateways.map((g: any) => g.gateway)).to.deep.equal(['groq', 'together']);
      expect(one.body.savings_percent).to.equal(27.27); // (8.8e-7 − 6.4e-7) / 8.8e-7
      const single = await get('/v1/models/openai/gpt-4o/compare?gateways=openrouter');
      expect(single.body.savings_percent).to.equal(null);
      expect((await get('/v1/models/openai/gpt-4o/compare?gateways=nope')).status).to.equal(404);
      expect((await get('/v1/models/openai/gpt-4o/compare?gateways=groq')).status).to.equal(404);
      expect((await get('/v1/models/nobody/nothing/compare')).status).to.equal(404);
    });

    it('getModel auto-detects the routable offer, healthiest first; an open breaker moves it', async () => {
      const res = await get('/v1/models/openai/gpt-4o');
      expect(res.status).to.equal(200);
      expect(res.body.model).to.include({ gateway: 'openai', hub: null });
      expect(res.body.offers.map((o: any) => o.gateway)).to.deep.equal(['openai', 'openrouter']);
      gw.services.catalog.setBreakerState((g) => (g === 'openai' ? 'open' : 'closed'));
      expect((await get('/v1/models/openai/gpt-4o')).body.model.gateway).to.equal('openrouter');
    });
    it('getModel with a gateway, without hub; 404 when that gateway lacks it or the model is unknown', async () => {
      const res = await get('/v1/models/openai/gpt-4o?gateway=openrouter&include_hub=false');
      expect(res.body.model.gateway).to.equal('openrouter');
      expect(res.body.model).to.not.have.property('hub');
      expect((await get('/v1/models/openai/gpt-4o?gateway=groq')).status).to.equal(404);
      expect((await get('/v1/models/openai/gpt-9')).status).to.equal(404);
      // only offer inactive and unconfigured: still shown, as the cheapest offer
      expect((await get('/v1/models/anthropic/claude-3-haiku-20240307')).body.model).to.include({ gateway: 'anthropic', is_active: false });
    });

    it('lists a developer\'s active offers; a known developer on another gateway is empty; unknown is 404', async () => {
      const res = await get('/v1/models/META-LLAMA?limit=2&offset=2');
      expect(res.body).to.include({ developer: 'meta-llama', total: 4, limit: 2, offset: 2 });
      expect(res.body.models.map((m: any) => `${m.id}@${m.gateway}:${m.hub}`)).to.deep.equal([
        'meta-llama/llama-3.3-70b-instruct@together:null', 'meta-llama/llama-3.3-70b-instruct:free@openrouter:null']);
      const empty = await get('/v1/models/meta-llama?gateway=anthropic');
      expect(empty.status).to.equal(200);
      expect(empty.body.total).to.equal(0);
      expect((await get('/v1/models/anthropic')).body.total).to.equal(2); // two offers of claude-sonnet-4.5; haiku inactive
      expect((await get('/v1/models/nobody')).status).to.equal(404);
      expect((await get('/v1/models/meta-llama?limit=0')).status).to.equal(422);
    });
  });
});
