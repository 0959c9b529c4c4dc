import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, type TestGateway } from '../support/app.js';

/**
 * Validation, routing traps and error bodies. Not-yet-built operations answer 501 naming their operationId, so
 * a 501 here still proves which operation a path reached.
 */
describe('contract: validation and routing', () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startTestGateway();
    ({ key } = await gw.newKey(5));
  });
  after(() => gw.close());

  const auth = () => ({ Authorization: `Bearer ${key}` });

  async function expect422(req: request.Test, loc: Array<string | number>, type?: string) {
    const res = await req;
    expect(res.status, JSON.stringify(res.body)).to.equal(422);
    const hit = res.body.detail.find((d: any) => JSON.stringify(d.loc) === JSON.stringify(loc));
    expect(hit, `no detail at ${JSON.stringify(loc)} in ${JSON.stringify(res.body)}`).to.exist;
    expect(hit.msg).to.be.a('string').and.not.empty;
    if (type) expect(hit.type).to.equal(type);
  }

  it('out-of-range limit → 422 at ["query","limit"]', async () => {
    await expect422(request(gw.app).get('/v1/models?limit=1001'), ['query', 'limit'], 'less_than_equal');
    await expect422(request(gw.app).get('/v1/provider?limit=0'), ['query', 'limit'], 'greater_than_equal');
    await expect422(request(gw.app).get('/v1/provider/openai/top-models?limit=21'), ['query', 'limit']);
    await expect422(request(gw.app).get('/v1/models/trending?limit=101'), ['query', 'limit']);
    await expect422(request(gw.app).get('/v1/models/search?limit=abc'), ['query', 'limit'], 'type_error');
  });

  it('offset < 0 → 422', async () => {
    await expect422(request(gw.app).get('/v1/models/unique?offset=-1'), ['query', 'offset']);
    await expect422(request(gw.app).get('/v1/models/low-latency?offset=-5'), ['query', 'offset']);
  });

  it('min_calls 0 and error_threshold 1.5 → 422 (with a key)', async () => {
    await expect422(request(gw.app).get('/v1/model-health/unhealthy?min_calls=0').set(auth()), ['query', 'min_calls']);
    await expect422(request(gw.app).get('/v1/model-health/unhealthy?error_threshold=1.5').set(auth()), ['query', 'error_threshold']);
  });

  it('empty hub q and missing hub q → 422', async () => {
    await expect422(request(gw.app).get('/v1/hub/search?q='), ['query', 'q'], 'string_too_short');
    await expect422(request(gw.app).get('/v1/hub/search'), ['query', 'q'], 'missing');
  });

  it('enum and time_range violations → 422', async () => {
    await expect422(request(gw.app).get('/v1/models/trending?time_range=all'), ['query', 'time_range'], 'enum');
    await expect422(request(gw.app).get('/v1/gateways/summary?time_range=2h'), ['query', 'time_range'], 'enum');
    await expect422(request(gw.app).get('/v1/models/unique?sort_by=size'), ['query', 'sort_by'], 'enum');
  });

  it('unknown query parameter → 422 naming it', async () => {
    await expect422(request(gw.app).get('/v1/models?limt=5'), ['query', 'limt'], 'extra_forbidden');
  });

  it('missing max_tokens on /v1/messages → 422 at ["body","max_tokens"]', async () => {
    await expect422(
      request(gw.app).post('/v1/messages').set({ 'x-api-key': key }).send({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      ['body', 'max_tokens'], 'missing');
  });

  it('body field errors carry the full location', async () => {
    await expect422(
      request(gw.app).post('/v1/chat/completions').set(auth()).send({ model: 'm', messages: [{ role: 'wizard', content: 'x' }] }),
      ['body', 'messages', 0, 'role']);
    await expect422(
      request(gw.app).post('/v1/chat/completions').set(auth()).send({ model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 3 }),
      ['body', 'temperature']);
  });

  it('malformed JSON → 422 json_invalid', async () => {
    const res = await request(gw.app).post('/v1/chat/completions').set(auth()).set('Content-Type', 'application/json').send('{"model": ');
    expect(res.status).to.equal(422);
    expect(res.body.detail[0]).to.include({ type: 'json_invalid' });
    expect(res.body.detail[0].loc).to.deep.equal(['body']);
  });

  it('body over the limit → 413 with the Error body', async () => {
    const big = await startTestGateway({ env: { BODY_LIMIT: '1kb' } });
    try {
      const res = await request(big.app).post('/v1/chat/completions').set('Content-Type', 'application/json')
        .send(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(5000) }] }));
      expect(res.status).to.equal(413);
      expect(res.body.error).to.include({ type: 'invalid_request_error', code: 'payload_too_large' });
    } finally {
      await big.close();
    }
  });

  it('unknown path → 404 JSON; wrong method → 405 JSON with Allow', async () => {
    const nf = await request(gw.app).get('/v1/nothing-here');
    expect(nf.status).to.equal(404);
    expect(nf.body.error).to.include({ type: 'not_found_error', code: 'route_not_found' });
    const na = await request(gw.app).delete('/v1/routers');
    expect(na.status).to.equal(405);
    expect(na.headers.allow).to.equal('GET, HEAD');
    expect(na.body.error.code).to.equal('method_not_allowed');
    const post = await request(gw.app).head('/v1/chat/completions').set(auth());
    expect(post.status).to.equal(405);
    expect(post.headers.allow).to.equal('POST');
  });

  it('HEAD answers as GET does, without the body: status, type, length, ETag (and 304 on a match); auth alike', async () => {
    // /metrics, /status and /health change between two requests (counters, times; /health's uptime_seconds when a
    // second ends between the two): their length and ETag are not compared
    for (const path of ['/v1/routers', '/v1/models?limit=3', '/health', '/openapi.yaml', '/metrics', '/status']) {
      const stable = path !== '/metrics' && path !== '/status' && path !== '/health';
      const get = await request(gw.app).get(path).set(auth()).buffer(true).parse((res, cb) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => cb(null, Buffer.concat(parts)));
      });
      const head = await request(gw.app).head(path).set(auth());
      expect(get.status, path).to.equal(200);
      expect(head.status, path).to.equal(200);
      expect((get.body as Buffer).length, path).to.be.greaterThan(0);
      expect(head.text ?? '', path).to.equal('');
      expect(head.headers['content-type'], path).to.equal(get.headers['content-type']);
      if (stable) {
        expect(Number(head.headers['content-length']), path).to.equal((get.body as Buffer).length);
      }
      if (stable && get.headers.etag !== undefined) expect(head.headers.etag, path).to.equal(get.headers.etag);
    }
    const tagged = await request(gw.app).get('/v1/routers');
    const notModified = await request(gw.app).head('/v1/routers').set('If-None-Match', tagged.headers.etag);
    expect(notModified.status).to.equal(304);
    // an operation that needs a key: refused on HEAD without one as on GET, answered with one
    expect((await request(gw.app).head('/v1/model-health')).status).to.equal(401);
    expect((await request(gw.app).get('/v1/model-health')).status).to.equal(401);
    const withKey = await request(gw.app).head('/v1/model-health').set(auth());
    expect(withKey.status).to.equal(200);
    expect(withKey.headers['content-type']).to.match(/^application\/json/);
  });

  it('every error carries the request id, echoed from X-Request-Id', async () => {
    const res = await request(gw.app).get('/v1/nothing').set('X-Request-Id', 'req-abc-123');
    expect(res.headers['x-request-id']).to.equal('req-abc-123');
    expect(res.body.error.request_id).to.equal('req-abc-123');
    const gen = await request(gw.app).get('/v1/nothing');
    expect(gen.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
  });

  describe('path traps', () => {
    /** The path reaches `operationId`: the answer validates against that operation's responses (tests validate
     * every response against the operation that answered), and `expect` pins the status. */
    const reaches = async (path: string, _operationId: string, expectStatus: number[] = [200]) => {
      const res = await request(gw.app).get(path).set(auth());
      expect(res.status, `${path}: ${JSON.stringify(res.body).slice(0, 300)}`).to.be.oneOf(expectStatus);
      return res;
    };
    it('static model paths are never captured by /v1/models/{developer_name}', async () => {
      // Misrouted to listDeveloperModels, these would be 404 "unknown developer".
      expect((await reaches('/v1/models/search', 'searchModels')).body).to.have.property('filters');
      expect((await reaches('/v1/models/trending', 'getTrendingModels')).body).to.have.property('sort_by');
      expect((await reaches('/v1/models/low-latency', 'listLowLatencyModels')).body).to.have.property('thresholds');
      expect((await reaches('/v1/models/unique', 'listUniqueModels')).body.models).to.be.an('array');
      await reaches('/v1/models/by-category/free', 'listModelsByCategory');
      await reaches('/v1/models/openai', 'listDeveloperModels');
      await reaches('/v1/models/openai/gpt-4o', 'getModel');
      await reaches('/v1/models/openai/gpt-4o/compare', 'compareModelAcrossGateways');
    });
    it('model ids with an encoded slash reach the hub, partner and status-model paths', async () => {
      // Not a 422 (the id pattern accepts one encoded slash) and not a route 404: the operation answers.
      const upstreamish = [200, 404, 502, 503, 504];
      for (const [p, op] of [['/v1/hub/models/meta-llama%2FLlama-3.1-8B/details', 'getHubModelDetails'], ['/v1/hub/models/meta-llama%2FLlama-3.1-8B/files', 'listHubModelFiles'],
        ['/v1/partner/check/meta-llama%2FLlama-3.1-8B', 'checkPartnerModel'], ['/v1/status/models/meta-llama/meta-llama%2FLlama-3.1-8B', 'getStatusModel']]) {
        const res = await reaches(p, op, upstreamish);
        if (res.status === 404) expect(res.body.error.code, p).to.not.equal('route_not_found');
      }
    });
    it('/v1/status and /v1/status/ both answer', async () => {
      await reaches('/v1/status', 'getStatus');
      await reaches('/v1/status/', 'getStatus');
    });
    it('/v1/tools/definitions is not a tool name', async () => {
      await reaches('/v1/tools/definitions', 'getToolDefinitions');
    });
  });

  it('/health answers with the version and /openapi.json serves the contract', async () => {
    const h = await request(gw.app).get('/health');
    expect(h.status).to.equal(200);
    expect(h.body).to.include({ status: 'ok', version: '2.0.3', database: 'ok' });
    const o = await request(gw.app).get('/openapi.json');
    expect(o.status).to.equal(200);
    expect(o.body.info.version).to.equal('2.0.3');
    expect(o.body.paths).to.have.property('/v1/chat/completions');
  });
});
