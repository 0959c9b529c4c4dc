import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { startFakeUpstream, json, type FakeUpstream } from '../support/upstream.js';
import { ApiError } from '../../src/errors.js';

const LLAMA = 'meta-llama/Llama-3.1-8B-Instruct';

/** List items as the hub's `GET /api/models?full=true` returns them. */
const listItem = (id: string, likes: number, downloads: number, extra: Record<string, unknown> = {}) => ({
  _id: `id-${id}`, id, modelId: id, author: id.split('/')[0], likes, downloads, private: false, gated: false,
  pipeline_tag: 'text-generation', library_name: 'transformers', tags: ['transformers', 'text-generation'],
  createdAt: '2024-07-18T08:56:00.000Z', lastModified: '2024-09-25T17:00:57.000Z', sha: 'abc123',
  siblings: [{ rfilename: 'config.json' }], ...extra,
});

const MODELS = [
  listItem(LLAMA, 4100, 5_000_000, { gated: 'manual', tags: ['transformers', 'safetensors', 'llama', 'text-generation', 'license:llama3.1'] }),
  listItem('Qwen/Qwen2.5-7B-Instruct', 900, 2_000_000),
  listItem('mistralai/Mistral-7B-Instruct-v0.3', 1800, 1_000_000),
  listItem('gpt2', 2500, 9_000_000, { author: undefined, library_name: undefined, pipeline_tag: null }),
];

const DETAILS = {
  ...listItem(LLAMA, 4100, 5_000_000, { gated: 'manual', tags: ['transformers', 'llama', 'license:llama3.1'] }),
  cardData: { license: 'llama3.1', language: ['en', 'de'], pipeline_tag: 'text-generation' },
  config: { architectures: ['LlamaForCausalLM'], model_type: 'llama', tokenizer_config: { eos_token: '<|eot_id|>' } },
  safetensors: { parameters: { BF16: 8030261248 }, total: 8030261248 },
  siblings: [{ rfilename: 'README.md' }, { rfilename: 'config.json' }, { rfilename: 'model.safetensors' }],
  spaces: [], downloadsAllTime: 60_000_000,
};

const TREE = [
  { type: 'directory', oid: 'd0', size: 0, path: 'original' },
  { type: 'file', oid: 'a1', size: 1519, path: 'README.md' },
  { type: 'file', oid: 'b2', size: 135, path: 'model-00001-of-00004.safetensors', lfs: { oid: 'sha-b', size: 4976698672, pointerSize: 135 } },
  { type: 'file', oid: 'c3', size: 855, path: 'config.json' },
  { type: 'file', oid: 'e5', size: 134, path: 'original/consolidated.00.pth', lfs: { oid: 'sha-e', size: 16060617592, pointerSize: 134 } },
];

const CARD = '---\nlicense: llama3.1\n---\n# Llama 3.1 — 8B Instruct\n\nMultilingual.\n';

describe('contract: model-hub facade', () => {
  let hub: FakeUpstream;
  let gw: TestGateway;
  let paged = false;

  before(async () => {
    hub = await startFakeUpstream((req, res) => {
      const u = new URL(req.url, 'http://x');
      const p = u.pathname;
      if (p === '/api/models') {
        let list = [...MODELS];
        if (u.searchParams.get('search')) list = list.filter((m) => m.id.toLowerCase().includes(u.searchParams.get('search')!.toLowerCase()));
        if (u.searchParams.get('author')) list = list.filter((m) => m.id.startsWith(`${u.searchParams.get('author')}/`));
        const key = u.searchParams.get('sort') as 'likes' | 'downloads';
        list.sort((a, b) => b[key] - a[key]);
        if (paged) {
          // two per page; the cursor is the index; a second Link to another origin must be ignored
          const at = Number(u.searchParams.get('cursor') ?? 0);
          const page = list.slice(at, at + 2);
          const headers: Record<string, string> = {};
          if (at + 2 < list.length) headers.link = `</api/models?cursor=${at + 2}&sort=${key}>; rel="next"`;
          if (at === 0 && u.searchParams.get('search') === 'a') headers.link = `<http://localhost:${new URL(hub.url).port}/api/models?cursor=2>; rel="next"`;
          return json(res, 200, page, headers);
        }
        return json(res, 200, list.slice(0, Number(u.searchParams.get('limit'))));
      }
      if (p === `/api/models/${LLAMA}`) return json(res, 200, DETAILS);
      if (p === '/api/models/gpt2') {
        res.writeHead(307, { location: '/api/models/openai-community/gpt2' });
        return res.end();
      }
      if (p === '/api/models/openai-community/gpt2') return json(res, 200, { ...listItem('openai-community/gpt2', 2500, 9_000_000), cardData: {} });
      if (p === '/api/models/moved/away') {
        res.writeHead(302, { location: `http://localhost:${new URL(hub.url).port}/api/models/${LLAMA}` });
        return res.end();
      }
      if (p === `/api/models/${LLAMA}/tree/main`) return json(res, 200, TREE);
      if (p === `/${LLAMA}/raw/main/README.md`) {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        return res.end(CARD);
      }
      if (p === '/api/models/broken/model') return json(res, 503, { error: 'Service Unavailable' });
      if (p === '/api/models/slow/model') return; // hangs
      if (p.startsWith('/api/models/')) return json(res, 401, { error: 'Repository not found' }, { 'x-error-code': 'RepoNotFound' });
      json(res, 404, { error: 'Entry not found' }, { 'x-error-code': 'EntryNotFound' });
    });
    gw = await startTestGateway({ env: { HUB_BASE_URL: hub.url, HUB_TIMEOUT_MS: '300', HUB_TOKEN: 'hf_test' } });
  });
  after(async () => {
    await gw.close();
    await hub.close();
  });
  beforeEach(() => { paged = false; });

  const get = (path: string) => request(gw.app).get(path);
  const lastQuery = () => Object.fromEntries(new URL(hub.requests.at(-1)!.url, 'http://x').searchParams);

  it('discovery: task and sort reach the hub; models mapped; offset and limit slice the ranking', async () => {
    const res = await get('/v1/hub/discovery?limit=2&offset=1');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(lastQuery()).to.deep.equal({ pipeline_tag: 'text-generation', sort: 'likes', direction: '-1', limit: '3', full: 'true' });
    expect(hub.requests.at(-1)!.headers.authorization).to.equal('Bearer hf_test');
    // by likes: llama 4100, gpt2 2500, mistral 1800, qwen 900 → offset 1, limit 2
    expect(res.body.models.map((m: any) => m.id)).to.deep.equal(['gpt2', 'mistralai/Mistral-7B-Instruct-v0.3']);
    expect(res.body).to.include({ total: 2, limit: 2, offset: 1, task: 'text-generation', sort: 'likes' });
    expect(res.body.models[0]).to.deep.equal({
      id: 'gpt2', author: null, pipeline_tag: null, library_name: null, likes: 2500, downloads: 9_000_000,
      tags: ['transformers', 'text-generation'], created_at: '2024-07-18T08:56:00.000Z', last_modified: '2024-09-25T17:00:57.000Z',
      private: false, gated: false,
    });
    const top = await get('/v1/hub/discovery?sort=downloads&limit=1&task=');
    expect(lastQuery()).to.not.have.property('pipeline_tag');
    expect(top.body.task).to.equal(null);
    expect(top.body.models[0]).to.include({ id: 'gpt2', downloads: 9_000_000 });
  });

  it('follows rel="next" pages on the hub\'s own origin only', async () => {
    paged = true;
    const before = hub.requests.length;
    const res = await get('/v1/hub/discovery?limit=4&sort=downloads&task=text-classification');
    expect(res.body.models.map((m: any) => m.id)).to.deep.equal(['gpt2', LLAMA, 'Qwen/Qwen2.5-7B-Instruct', 'mistralai/Mistral-7B-Instruct-v0.3']);
    expect(hub.requests.length - before).to.equal(2);
    const off = await get('/v1/hub/search?q=a&limit=4');
    expect(off.status).to.equal(200);
    // the first page pointed to another origin (localhost, not 127.0.0.1): not followed, two models only
    expect(off.body.models).to.have.length(2);
    expect(hub.requests.at(-1)!.url).to.not.contain('cursor');
  });

  it('search and author listing send search= / author= sorted by downloads', async () => {
    const s = await get('/v1/hub/search?q=instruct&limit=5');
    expect(s.status).to.equal(200);
    expect(lastQuery()).to.deep.equal({ search: 'instruct', sort: 'downloads', direction: '-1', limit: '5', full: 'true' });
    expect(s.body.models.map((m: any) => m.id)).to.deep.equal([LLAMA, 'Qwen/Qwen2.5-7B-Instruct', 'mistralai/Mistral-7B-Instruct-v0.3']);
    expect(s.body).to.include({ task: null, sort: 'downloads', total: 3 });
    const a = await get('/v1/hub/author/meta-llama/models?limit=10');
    expect(lastQuery()).to.deep.equal({ author: 'meta-llama', sort: 'downloads', direction: '-1', limit: '10', full: 'true' });
    expect(a.body).to.include({ total: 1, offset: 0, sort: 'downloads', task: null });
    expect(a.body.models[0]).to.include({ id: LLAMA, author: 'meta-llama', gated: 'manual' });
  });

  it('details of an id with a slash (sent as %2F): path segments reach the hub, fields mapped', async () => {
    const res = await get('/v1/hub/models/meta-llama%2FLlama-3.1-8B-Instruct/details');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(hub.requests.at(-1)!.url).to.equal('/api/models/meta-llama/Llama-3.1-8B-Instruct');
    expect(res.body).to.deep.equal({
      id: LLAMA, author: 'meta-llama', sha: 'abc123', pipeline_tag: 'text-generation', library_name: 'transformers',
      tags: ['transformers', 'llama', 'license:llama3.1'], likes: 4100, downloads: 5_000_000, license: 'llama3.1',
      card_data: DETAILS.cardData, siblings_count: 3, gated: 'manual', private: false,
      created_at: '2024-07-18T08:56:00.000Z', last_modified: '2024-09-25T17:00:57.000Z',
      config: DETAILS.config, safetensors: { parameters: { BF16: 8030261248 }, total: 8030261248 },
    });
  });

  it('a renamed model is followed through the hub\'s redirect; a redirect to another origin is a 502', async () => {
    const res = await get('/v1/hub/models/gpt2/details');
    expect(res.status).to.equal(200);
    expect(res.body.id).to.equal('openai-community/gpt2');
    const away = await get('/v1/hub/models/moved%2Faway/details');
    expect(away.status).to.equal(502);
    expect(hub.requests.at(-1)!.url).to.equal('/api/models/moved/away');
  });

  it('card: the README as Markdown with its length in characters', async () => {
    const res = await get('/v1/hub/models/meta-llama%2FLlama-3.1-8B-Instruct/card');
    expect(res.status).to.equal(200);
    expect(hub.requests.at(-1)!.url).to.equal('/meta-llama/Llama-3.1-8B-Instruct/raw/main/README.md');
    expect(res.body).to.deep.equal({ model_id: LLAMA, card_markdown: CARD, length: 67 });
    const none = await get('/v1/hub/models/someone%2Fno-card/card');
    expect(none.status).to.equal(404);
  });

  it('files: recursive tree, directories dropped, LFS files at their real size, sorted, summed', async () => {
    const res = await get('/v1/hub/models/meta-llama%2FLlama-3.1-8B-Instruct/files');
    expect(res.status).to.equal(200);
    expect(hub.requests.at(-1)!.url).to.equal('/api/models/meta-llama/Llama-3.1-8B-Instruct/tree/main?recursive=true');
    expect(res.body.files).to.deep.equal([
      { path: 'README.md', size: 1519, lfs: false, blob_id: 'a1' },
      { path: 'config.json', size: 855, lfs: false, blob_id: 'c3' },
      { path: 'model-00001-of-00004.safetensors', size: 4976698672, lfs: true, blob_id: 'b2' },
      { path: 'original/consolidated.00.pth', size: 16060617592, lfs: true, blob_id: 'e5' },
    ]);
    expect(res.body.total_size).to.equal(21037318638);
  });

  it('the hub\'s 401 "Repository not found" is a 404; a hub 5xx is a 502', async () => {
    for (const op of ['details', 'files']) {
      const res = await get(`/v1/hub/models/nobody%2Fnothing/${op}`);
      expect(res.status, op).to.equal(404);
      expect(res.body.error.type).to.equal('not_found_error');
      expect(res.body.error.message).to.contain('nobody/nothing');
    }
    const broken = await get('/v1/hub/models/broken%2Fmodel/details');
    expect(broken.status).to.equal(502);
    expect(broken.body.error).to.include({ type: 'upstream_error' });
    expect(broken.body.error.message).to.contain('HTTP 503');
  });

  it('a hub that hangs is a 504 (HUB_TIMEOUT_MS 300)', async () => {
    const res = await get('/v1/hub/models/slow%2Fmodel/details');
    expect(res.status).to.equal(504);
    expect(res.body.error.code).to.equal('upstream_timeout');
  });

  it('ids crafted to leave the model path are 422 and never reach the hub', async () => {
    const before = hub.requests.length;
    for (const id of ['..%2F..%2Fapi%2Fwhoami-v2', '..', '%2E%2E', 'a%2Fb%2Fc', 'a%3Fx%3D1', 'a%23frag', 'a%20b', '%2Fetc', 'a%2F..', 'a%5Cb',
      'http%3A%2F%2Fevil.example%2Fx', '.', 'a%2F.']) {
      const res = await get(`/v1/hub/models/${id}/details`);
      expect(res.status, `${id}: ${JSON.stringify(res.body)}`).to.equal(422);
      expect(res.body.detail[0].loc).to.deep.equal(['path', 'model_id']);
    }
    const author = await get('/v1/hub/author/a%2Fb/models');
    expect(author.status).to.equal(422);
    expect(hub.requests.length, 'no crafted id reached the hub').to.equal(before);
    // the service checks too, whoever calls it
    for (const id of ['../x', 'a/b/c', 'a?b']) {
      let err: unknown;
      try { await gw.services.hub.details(id); } catch (e) { err = e; }
      expect(err, id).to.be.instanceOf(ApiError);
      expect((err as ApiError).status).to.equal(422);
    }
    expect(hub.requests.length).to.equal(before);
  });

  it('answers are cached: a repeated request does not reach the hub again', async () => {
    await get('/v1/hub/models/meta-llama%2FLlama-3.1-8B-Instruct/card');
    const before = hub.requests.length;
    const again = await get('/v1/hub/models/meta-llama%2FLlama-3.1-8B-Instruct/card');
    expect(again.status).to.equal(200);
    expect(hub.requests.length).to.equal(before);
  });
});
