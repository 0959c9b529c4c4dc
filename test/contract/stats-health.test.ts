import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, ADMIN_KEY, type TestGateway } from '../support/app.js';
import { postgresAvailable, DIALECTS } from '../support/db.js';
import { knownTraffic, calls, seq, NOW, HOUR, MIN, DIRECTORY, MODELS } from '../support/traffic.js';

const iso = (t: number) => new Date(t).toISOString();

/**
 * Statistics, model health and the status page over HTTP, with response validation on: known traffic goes in
 * through the recorder (the engine's path), figures come out of the operations. The unit tests cover every
 * figure; here each operation is checked end to end on two time ranges where it has them.
 */
for (const dialect of DIALECTS) {
  describe(`contract: statistics, model health and status on ${dialect}`, function () {
    let gw: TestGateway;
    let key: string;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      gw = await startTestGateway({ dialect, wiring: { directory: DIRECTORY, clock: () => NOW } });
      ({ key } = await gw.newKey(1));
      for (const r of knownTraffic()) gw.services.recorder.recordUsage(r);
      const obs = [
        ...calls('openai', 'openai', MODELS.G4, seq('1', 19, '0', 1)), // 0.95, last failed → degraded
        ...calls('openrouter', 'openai', MODELS.G4, seq('1', 20)), // healthy
        ...calls('anthropic', 'anthropic', MODELS.CLAUDE, '000'), // unhealthy → anthropic in outage
        ...calls('openai', 'openai', MODELS.MINI, seq('1', 5), { source: 'probe' }), // healthy, from probes
      ];
      for (const o of obs) gw.services.recorder.recordHealth(o);
      await gw.services.recorder.flush();
      await gw.services.health.settled();
    });
    after(async () => { await gw?.close(); });

    const auth = () => ({ Authorization: `Bearer ${key}` });
    const get = (url: string, headers: Record<string, string> = {}) => request(gw.app).get(url).set(headers);

    it('provider stats over 1 h and 24 h', async () => {
      const h = await get('/v1/provider/openai/stats?time_range=1h');
      expect(h.status).to.equal(200);
      expect(h.body).to.deep.include({ total_requests: 4, successful_requests: 2, failed_requests: 1, total_tokens: 515, total_cost_usd: 0.0046, top_model: MODELS.G4 });
      const d = await get('/v1/provider/openai/stats');
      expect(d.body).to.deep.include({ time_range: '24h', total_requests: 7, avg_latency_ms: 2000.25, avg_tokens_per_second: 290.63 });
      expect(d.body.period).to.deep.equal({ start: iso(NOW - 24 * HOUR), end: iso(NOW) });
      const g = await get('/v1/provider/openai/stats?time_range=24h&gateway=or');
      expect(g.body).to.deep.include({ gateway: 'openrouter', total_requests: 3 });
    });

    it('gateway stats over 1 h and 7 d; alias resolved; unknown gateway 404', async () => {
      expect((await get('/v1/gateway/openai/stats?time_range=1h')).body).to.deep.include({ total_requests: 2, unique_users: 2, unique_models: 2 });
      expect((await get('/v1/gateway/openai/stats?time_range=7d')).body).to.deep.include({ total_requests: 5, unique_users: 5 });
      expect((await get('/v1/gateway/or/stats?time_range=1h')).body.gateway).to.equal('openrouter');
      const nf = await get('/v1/gateway/nowhere/stats');
      expect(nf.status).to.equal(404);
      expect(nf.body.error.type).to.equal('not_found_error');
    });

    it('gateways summary, top models and trending over two ranges', async () => {
      const s1 = await get('/v1/gateways/summary?time_range=1h');
      expect(s1.body.totals).to.deep.equal({ total_requests: 5, total_tokens: 845, total_cost_usd: 0.0066, unique_users: 3, unique_models: 3, active_gateways: 3 });
      expect(s1.body.gateways.map((g: any) => g.gateway)).to.deep.equal(['openai', 'openrouter', 'anthropic', 'groq']);
      expect((await get('/v1/gateways/summary?time_range=all')).body.totals).to.deep.include({ total_requests: 11, unique_users: 6 });
      const top = await get('/v1/provider/openai/top-models?time_range=24h&limit=1&offset=1');
      expect(top.body).to.deep.include({ total: 2, limit: 1, offset: 1 });
      expect(top.body.models.map((m: any) => [m.rank, m.model, m.unique_users])).to.deep.equal([[2, MODELS.MINI, 3]]);
      const t1 = await get('/v1/models/trending?time_range=1h');
      expect(t1.body.models.map((m: any) => [m.model, m.requests])).to.deep.equal([[MODELS.G4, 2], [MODELS.MINI, 2], [MODELS.CLAUDE, 1]]);
      const t24 = await get('/v1/models/trending?sort_by=users');
      expect(t24.body).to.deep.include({ time_range: '24h', sort_by: 'users', gateway: 'all', total: 3 });
      expect(t24.body.models[0]).to.deep.include({ model: MODELS.G4, unique_users: 3, growth_percent: 200 });
    });

    it('model health operations need a key: 401 without, 200 with', async () => {
      for (const url of ['/v1/model-health', `/v1/model-health/openai/${encodeURIComponent(MODELS.G4)}`, '/v1/model-health/unhealthy',
        '/v1/model-health/stats', '/v1/model-health/provider/openai/summary', '/v1/model-health/providers', '/health/summary', '/v1/status/detailed']) {
        expect((await get(url)).status, url).to.equal(401);
        expect((await get(url, auth())).status, url).to.equal(200);
      }
    });

    it('model health list, detail (id with an encoded slash or without its prefix), unhealthy, stats', async () => {
      const list = await get('/v1/model-health?provider=openai', auth());
      expect(list.body).to.deep.include({ total: 3, limit: 100, offset: 0, filters: { provider: 'openai', status: null } });
      expect(list.body.models.map((m: any) => [m.gateway, m.model_id, m.status, m.total_requests])).to.deep.equal([
        ['openai', MODELS.G4, 'degraded', 20], ['openai', MODELS.MINI, 'healthy', 5], ['openrouter', MODELS.G4, 'healthy', 20],
      ]);
      expect((await get('/v1/model-health?status=error', auth())).body.models.map((m: any) => m.model_id)).to.deep.equal([MODELS.CLAUDE, MODELS.G4]);
      const d = await get(`/v1/model-health/openai/${encodeURIComponent(MODELS.G4)}`, auth());
      expect(d.body.model.gateway).to.equal('openai'); // 20 calls each: the later last call (both 1 min ago) → same; then gateway order
      expect(d.body.gateways.map((g: any) => g.gateway)).to.deep.equal(['openai', 'openrouter']);
      expect(d.body.history).to.have.length(20);
      expect((await get('/v1/model-health/openai/gpt-4o-mini', auth())).body.history[0].source).to.equal('probe');
      expect((await get('/v1/model-health/openai/nothing', auth())).status).to.equal(404);
      const u = await get('/v1/model-health/unhealthy?error_threshold=0.05&min_calls=3', auth());
      expect(u.body.models.map((m: any) => [m.model_id, m.error_rate])).to.deep.equal([[MODELS.CLAUDE, 1], [MODELS.G4, 0.05]]);
      expect((await get('/v1/model-health/stats', auth())).body).to.deep.equal({
        total_models: 4, total_calls: 48, total_success: 44, total_errors: 4, average_response_time: 100, success_rate: 0.9167,
      });
      expect((await get('/v1/model-health/provider/nobody/summary', auth())).status).to.equal(404);
      expect((await get('/v1/model-health/provider/openai/summary', auth())).body).to.deep.include({ gateway: 'all', status: 'degraded', total_calls: 45 });
    });

    it('health summary and the public status page agree: anthropic in outage is a partial outage', async () => {
      const s = await get('/health/summary', auth());
      expect(s.body.system).to.deep.include({ overall_status: 'degraded', total_providers: 3, healthy_providers: 1, degraded_providers: 1, unhealthy_providers: 1 });
      expect(s.body.monitoring_active).to.equal(false);
      expect(s.body.last_check).to.equal(iso(NOW - MIN));
      const o = await get('/v1/status');
      expect(o.body).to.deep.include({ status: 'partial_outage', total_providers: 3, operational_providers: 1, total_models: 4, healthy_models: 2,
        requests_last_24h: 8, avg_response_time_ms: 2200.2 }); // successful: 1000, 2000, 3000, 4000, 1001
      const p = await get('/v1/status/providers');
      expect(p.body.map((e: any) => [e.provider, e.gateway, e.status])).to.deep.equal([
        ['anthropic', 'anthropic', 'outage'], ['openai', 'openai', 'degraded'], ['openai', 'openrouter', 'operational'],
      ]);
    });

    it('status models: filters by health status and tier, unknown values match nothing; one model by encoded id', async () => {
      expect((await get('/v1/status/models?status=healthy')).body.map((m: any) => [m.gateway, m.model_id])).to.deep.equal([
        ['openai', MODELS.MINI], ['openrouter', MODELS.G4],
      ]);
      expect((await get('/v1/status/models?tier=warm&provider=anthropic')).body).to.have.length(1);
      expect((await get('/v1/status/models?tier=hot')).body).to.deep.equal([]);
      expect((await get('/v1/status/models?status=bogus')).body).to.deep.equal([]);
      const m = await get(`/v1/status/models/anthropic/${encodeURIComponent(MODELS.CLAUDE)}`);
      expect(m.body).to.deep.include({ status: 'unhealthy', success_rate: 0, last_failure: iso(NOW - MIN) });
      expect(m.body.recent_incidents).to.have.length(1);
      expect(m.body.recent_incidents[0]).to.deep.include({ status: 'ongoing', started_at: iso(NOW - MIN), error_message: 'boom 2' });
      expect((await get('/v1/status/models/anthropic/claude-x')).body.model_id).to.equal(MODELS.CLAUDE);
      expect((await get('/v1/status/models/anthropic/nothing')).status).to.equal(404);
    });

    it('detailed status for any valid key: database, gateways with breaker state, buffer, monitor', async () => {
      for (let i = 0; i < 5; i++) await gw.services.breakers.failure('openrouter', MODELS.G4); // five failures open it
      for (const headers of [auth(), { Authorization: `Bearer ${ADMIN_KEY}` }]) {
        const r = await get('/v1/status/detailed', headers);
        expect(r.status).to.equal(200);
        expect(r.body).to.deep.include({ status: 'partial_outage', version: '2.0.3', database: { dialect, ok: true },
          redis: { configured: false, ok: null }, usage_buffer: { pending_records: 0 }, monitoring_active: false });
        expect(r.body.gateways.map((g: any) => [g.id, g.breaker_state, g.configured])).to.deep.equal([
          ['anthropic', 'closed', false], ['groq', 'closed', false], ['openai', 'closed', false], ['openrouter', 'open', false],
        ]);
      }
    });

    it('/metrics exposes requests by operation, tokens and cost from flushed usage, upstream attempts and breaker state', async () => {
      gw.services.metrics.upstreamRequest('openai', 'server_error', 1200);
      gw.services.metrics.upstreamRequest('openai', 'success', 300);
      await get('/v1/status');
      const m = await get('/metrics');
      expect(m.status).to.equal(200);
      expect(m.headers['content-type']).to.match(/^text\/plain/);
      const value = (line: string) => {
        const hit = m.text.split('\n').find((l) => l.startsWith(line + ' '));
        return hit === undefined ? undefined : Number(hit.slice(line.length + 1));
      };
      expect(value('gateway_tokens_total{gateway="openai",provider="openai",type="prompt"}')).to.equal(1665);
      expect(value('gateway_tokens_total{gateway="openai",provider="openai",type="completion"}')).to.equal(316);
      expect(value('gateway_cost_usd_total{gateway="openai",provider="openai"}')).to.be.closeTo(0.01380105, 1e-12);
      expect(value('gateway_usage_records_total{gateway="openrouter",provider="openai",status="timeout"}')).to.equal(1);
      expect(value('gateway_upstream_errors_total{gateway="openai",kind="server_error"}')).to.equal(1);
      expect(value('gateway_upstream_requests_total{gateway="openai",outcome="success"}')).to.equal(1);
      expect(value('gateway_circuit_breaker_state{gateway="openrouter"}')).to.equal(2);
      expect(value('gateway_http_requests_total{operation="getStatus",status="200"}')).to.be.at.least(1);
      expect(value('gateway_http_requests_total{operation="listModelHealth",status="401"}')).to.be.at.least(1);
      expect(m.text).to.contain('gateway_http_request_duration_seconds_bucket{le="0.005",operation="getStatus"}');
      // the process's own: the event-loop delay (sampled every 50 ms) among them
      expect(value('nodejs_eventloop_lag_p99_seconds')).to.be.a('number').and.at.least(0);
      expect(value('process_resident_memory_bytes')).to.be.greaterThan(10e6);
    });

    it('/status is an HTML page with the overall state, providers and models', async () => {
      const r = await get('/status');
      expect(r.status).to.equal(200);
      expect(r.headers['content-type']).to.match(/^text\/html/);
      expect(r.text).to.contain('Partial outage: some providers are down');
      expect(r.text).to.contain(`data-model="${MODELS.CLAUDE}"`);
      expect(r.text.match(/class="bar /g)).to.have.length(3 * 30 + 4 * 24);
    });
  });
}
