import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { FIXTURE_ENV, recordFixtureHealth } from '../support/catalog-fixture.js';

/**
 * resolve() keeps what a model name resolved to until the next health refresh (every request resolves its
 * model): the order must still follow health as soon as the catalog sees it.
 */
describe('catalog: resolved orders follow each health refresh', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ env: FIXTURE_ENV });
    await recordFixtureHealth(gw);
  });
  after(() => gw.close());

  const route = (model: string) => gw.services.catalog.resolve(model).map((o) => `${o.gateway}:${o.upstreamModel}`);

  it('a gateway that turns unhealthy goes last on the next resolve after the refresh, and the same answer is reused until then', async () => {
    const first = gw.services.catalog.resolve('gpt-4o');
    expect(route('gpt-4o')).to.deep.equal(['openai:gpt-4o', 'openrouter:openai/gpt-4o']);
    expect(gw.services.catalog.resolve('gpt-4o')).to.equal(first); // reused, not re-ordered
    const now = Date.now();
    await gw.store.health.record([1, 2, 3, 4].map((i) => ({ gateway: 'openai', model: 'gpt-4o', provider: 'openai', ok: false, status: 'error',
      latencyMs: 1000, error: 'boom', ts: now + i, source: 'passive' })));
    // not yet refreshed: the catalog still answers what it knew
    expect(route('gpt-4o')).to.deep.equal(['openai:gpt-4o', 'openrouter:openai/gpt-4o']);
    await gw.services.catalog.refreshHealth();
    expect(route('gpt-4o')).to.deep.equal(['openrouter:openai/gpt-4o', 'openai:gpt-4o']);
    expect(route('router:cheapest/gpt-4o')).to.deep.equal(['openrouter:openai/gpt-4o', 'openai:gpt-4o']);
  });

  it('names that resolve to nothing are not kept', () => {
    for (let i = 0; i < 5000; i++) expect(gw.services.catalog.resolve(`no-such-model-${i}`)).to.have.length(0);
    expect(gw.services.catalog.snapshot.resolved.size).to.be.below(4096);
  });
});
