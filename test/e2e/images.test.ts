/**
 * POST /v1/images/generations with the official OpenAI SDK, the gateway in front of the upstream simulator.
 * Prices are the fixture catalog's per-image prices (dall-e-3 $0.04, dall-e-2 $0.02, gpt-image-1 $0.04,
 * imagen-3 $0.03, test/flux $0.01); a charge is price × max(1, pixels / 1024²) × the quality factor.
 */
import { expect } from 'chai';
import { APIError } from 'openai';
import { PNG_1X1 } from '../support/sim/openai-media.js';
import { startMediaStack, type MediaStack } from '../support/media-stack.js';
import { usageRows as recordedUsage } from '../support/e2e.js';

const NANO = 1e9;

describe('e2e: /v1/images/generations with the OpenAI SDK', function () {
  this.timeout(30_000);
  let s: MediaStack;
  let key: string;
  let userId: number;

  before(async () => {
    s = await startMediaStack();
    ({ key, userId } = await s.gateway.newKey(1));
  });
  after(() => s?.close());
  beforeEach(() => s.sim.reset());

  const balance = () => s.gateway.store.credits.balance(userId);
  const usageRows = () => recordedUsage(s.gateway, userId);
  const refusal = async (p: Promise<unknown>): Promise<APIError> => {
    try {
      await p;
    } catch (err) {
      if (err instanceof APIError) return err;
      throw err;
    }
    throw new Error('expected the request to fail');
  };

  it('url images (dall-e-3): the upstream URL, the per-image price charged once, a usage record', async () => {
    const before = await balance();
    const { data: res, response } = await s.client(key).images.generate({ model: 'dall-e-3', prompt: 'a red fox', size: '1024x1024' }).withResponse();
    expect(res.data).to.have.length(1);
    const url = res.data![0].url!;
    expect(url).to.match(new RegExp(`^${s.sim.url}/files/image-1-1\\.png$`));
    const png = Buffer.from(await (await fetch(url)).arrayBuffer());
    expect(png.equals(PNG_1X1)).to.equal(true);
    const gu = (res as any).gateway_usage;
    expect(gu).to.include({ gateway: 'openai', provider: 'openai', model: 'dall-e-3', images: 1, cost_usd: 0.04 });
    expect(response.headers.get('x-gateway-provider')).to.equal('openai');
    expect(await balance()).to.equal(before - 0.04 * NANO);
    const call = s.sim.calls.find((c) => c.path === '/v1/images/generations')!;
    expect(call.body).to.deep.equal({ model: 'dall-e-3', prompt: 'a red fox', n: 1, size: '1024x1024', response_format: 'url' });
    expect(call.headers.authorization).to.equal('Bearer sim-key');
    const row = (await usageRows()).at(-1)!;
    expect(row).to.include({ endpoint: 'images.generations', gateway: 'openai', model: 'openai/dall-e-3', status: 'success', http_status: 200 });
    expect(Number(row.cost_nano)).to.equal(0.04 * NANO);
  });

  it('b64_json images (dall-e-2, n=2, 256x256): PNG bytes; small sizes cost a full image each', async () => {
    const before = await balance();
    const res = await s.client(key).images.generate({ model: 'openai/dall-e-2', prompt: 'two cats', n: 2, size: '256x256', response_format: 'b64_json' });
    expect(res.data!.map((d) => Buffer.from(d.b64_json!, 'base64').equals(PNG_1X1))).to.deep.equal([true, true]);
    expect(res.data!.every((d) => d.url === undefined)).to.equal(true);
    expect((res as any).gateway_usage).to.include({ images: 2, cost_usd: 0.04 });
    expect(await balance()).to.equal(before - 0.04 * NANO);
  });

  it('size and quality scale the price: dall-e-3 1792x1024 hd = $0.04 × 1.75 × 2', async () => {
    const before = await balance();
    const res = await s.client(key).images.generate({ model: 'dall-e-3', prompt: 'a wide view', size: '1792x1024', quality: 'hd' });
    expect((res as any).gateway_usage.cost_usd).to.be.closeTo(0.14, 1e-12);
    expect(await balance()).to.equal(before - 0.14 * NANO);
    expect(s.sim.calls.at(-1)!.body).to.include({ quality: 'hd', size: '1792x1024' });
  });

  it('gpt-image-1: no response_format upstream (it always answers base64), so a url request gets a data: URL', async () => {
    const res = await s.client(key).images.generate({ model: 'gpt-image-1', prompt: 'a logo', quality: 'low', response_format: 'url' });
    expect(res.data![0].url).to.equal(`data:image/png;base64,${PNG_1X1.toString('base64')}`);
    expect(s.sim.calls.at(-1)!.body).to.deep.equal({ model: 'gpt-image-1', prompt: 'a logo', n: 1, size: '1024x1024', quality: 'low' });
    expect((res as any).gateway_usage.cost_usd).to.be.closeTo(0.01, 1e-12); // $0.04 × ¼
  });

  it('the Vertex endpoint provider: google_* fields pick the endpoint; Bearer credentials from configuration', async () => {
    const before = await balance();
    const res = await s.client(key).images.generate({
      model: 'imagen-3.0-generate-002', prompt: 'a lighthouse', n: 2, size: '1024x1024', response_format: 'b64_json',
      google_project_id: 'my-proj', google_location: 'europe-west4', google_endpoint_id: 'echo',
    } as any);
    expect(res.data!.map((d) => d.b64_json)).to.deep.equal([PNG_1X1.toString('base64'), PNG_1X1.toString('base64')]);
    expect((res as any).gateway_usage).to.include({ gateway: 'google', images: 2, cost_usd: 0.06 });
    expect(await balance()).to.equal(before - 0.06 * NANO);
    const call = s.sim.calls.at(-1)!;
    expect(call.path).to.equal('/v1/projects/my-proj/locations/europe-west4/endpoints/echo:predict');
    expect(call.headers.authorization).to.equal('Bearer sim-key');
    expect(call.body).to.deep.equal({ instances: [{ prompt: 'a lighthouse' }], parameters: { sampleCount: 2, width: 1024, height: 1024 } });
  });

  it('Vertex without an endpoint id calls the publisher model; url answers are data: URLs; a blocked prompt is a 400', async () => {
    const res = await s.client(key).images.generate({ model: 'imagen-3.0-generate-002', prompt: 'a field', size: '1536x1024', google_project_id: 'p1' } as any);
    expect(res.data![0].url).to.match(/^data:image\/png;base64,/);
    expect(s.sim.calls.at(-1)!.path).to.equal('/v1/projects/p1/locations/us-central1/publishers/google/models/imagen-3.0-generate-002:predict');
    expect(s.sim.calls.at(-1)!.body.parameters).to.deep.equal({ sampleCount: 1, aspectRatio: '3:2' });
    const before = await balance();
    const err = await refusal(s.client(key).images.generate({ model: 'imagen-3.0-generate-002', prompt: 'BLOCKED thing', google_project_id: 'p1' } as any));
    expect(err.status).to.equal(400);
    expect(err.message).to.contain('safety filter');
    expect(await balance()).to.equal(before);
  });

  it('Vertex needs a project: 400 naming google_project_id; a bad id is a 422', async () => {
    const err = await refusal(s.client(key).images.generate({ model: 'imagen-3.0-generate-002', prompt: 'x' }));
    expect(err.status).to.equal(400);
    expect((err.error as any).param).to.equal('google_project_id');
    const bad = await refusal(s.client(key).images.generate({ model: 'imagen-3.0-generate-002', prompt: 'x', google_project_id: '../etc' } as any));
    expect(bad.status).to.equal(422); // the detail is checked in test/contract/media.test.ts
  });

  it('failover: the first gateway fails, the next serves; only the served images are charged', async () => {
    const before = await balance();
    const res = await s.client(key).images.generate({ model: 'test/flux', prompt: 'a boat', size: '512x512', response_format: 'b64_json' });
    expect((res as any).gateway_usage).to.include({ gateway: 'deepinfra', cost_usd: 0.01 });
    expect(s.sim.calls.map((c) => c.model)).to.deep.equal(['sim/error-500', 'sim/echo']);
    expect(await balance()).to.equal(before - 0.01 * NANO);
  });

  it('an upstream failure costs nothing: 502, balance unchanged, no open hold, an error usage record', async () => {
    const before = await balance();
    const err = await refusal(s.client(key).images.generate({ model: 'test/image-broken', prompt: 'x' }));
    expect(err.status).to.equal(502);
    expect(await balance()).to.equal(before);
    expect(await s.gateway.store.credits.openHoldCount(userId)).to.equal(0);
    const row = (await usageRows()).at(-1)!;
    expect(row).to.include({ endpoint: 'images.generations', status: 'error', http_status: 502 });
    expect(Number(row.cost_nano)).to.equal(0);
  });

  it('n, quality and size are checked against the model: 400 naming what it supports', async () => {
    const n = await refusal(s.client(key).images.generate({ model: 'dall-e-3', prompt: 'x', n: 2 }));
    expect([n.status, (n.error as any).param]).to.deep.equal([400, 'n']);
    expect(n.message).to.contain('at most 1 image per request');
    const q = await refusal(s.client(key).images.generate({ model: 'dall-e-2', prompt: 'x', quality: 'hd' }));
    expect([q.status, (q.error as any).param]).to.deep.equal([400, 'quality']);
    expect(q.message).to.contain('supported: standard');
    const size = await refusal(s.client(key).images.generate({ model: 'dall-e-3', prompt: 'x', size: '512x512' }));
    expect([size.status, (size.error as any).param]).to.deep.equal([400, 'size']);
    expect(size.message).to.contain('1024x1024, 1792x1024, 1024x1792');
    const shape = await refusal(s.client(key).images.generate({ model: 'dall-e-3', prompt: 'x', size: 'big' as any }));
    expect(shape.status).to.equal(422);
    expect(s.sim.calls).to.have.length(0);
  });

  it('a provider that cannot make images is a 400 naming it; so is a model that makes none', async () => {
    const pinned = await refusal(s.client(key).images.generate({ model: 'dall-e-3', prompt: 'x', provider: 'anthropic' } as any));
    expect(pinned.status).to.equal(400);
    expect(pinned.message).to.contain("Provider 'anthropic' cannot generate images");
    const only = await refusal(s.client(key).images.generate({ model: 'test/anthropic-image', prompt: 'x' }));
    expect(only.status).to.equal(400);
    expect(only.message).to.contain('offered only by anthropic');
    const chat = await refusal(s.client(key).images.generate({ model: 'test/echo', prompt: 'x' }));
    expect(chat.status).to.equal(400);
    expect(chat.message).to.contain("The model 'test/echo' cannot generate images");
    const unconfigured = await refusal(s.client(key).images.generate({ model: 'xai/grok-2-image', prompt: 'x' }));
    expect(unconfigured.status).to.equal(503);
    const unknown = await refusal(s.client(key).images.generate({ model: 'nope/none', prompt: 'x' }));
    expect(unknown.status).to.equal(404);
  });

  it('402 when the balance cannot cover n images; nothing is called', async () => {
    const poor = await s.gateway.newKey(0.05, 'poor');
    const err = await refusal(s.client(poor.key).images.generate({ model: 'dall-e-2', prompt: 'x', n: 3 }));
    expect(err.status).to.equal(402);
    expect((err.error as any).type).to.equal('insufficient_credits');
    expect(s.sim.calls).to.have.length(0);
    expect(await s.gateway.store.credits.balance(poor.userId)).to.equal(0.05 * NANO);
  });

  it('an upstream refusal (400) keeps its meaning and goes to the security log unless log_security_violations=false', async () => {
    const logger = (s.gateway.services.media.images as any).jobs.d.logger;
    const events: any[] = [];
    const warn = logger.warn;
    logger.warn = (obj: any) => { if (obj?.securityEvent) events.push(obj); };
    try {
      const err = await refusal(s.client(key).images.generate({ model: 'test/image-refused', prompt: 'x' }));
      expect(err.status).to.equal(400);
      expect((err.error as any).code).to.equal('upstream_bad_request');
      expect(events).to.have.length(1);
      expect(events[0]).to.include({ securityEvent: 'image_request_refused', userId, model: 'test/image-refused' });
      await refusal(s.client(key).images.generate({ model: 'test/image-refused', prompt: 'x' }, { query: { log_security_violations: false } }));
      expect(events).to.have.length(1);
    } finally {
      logger.warn = warn;
    }
  });
});
