import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { startTestGateway, type TestGateway } from '../support/app.js';
import type { HealthObservation } from '../../src/store/health.js';
import { NOW, MIN, HOUR, DAY } from '../support/traffic.js';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARTIFACT = path.resolve('test/artifacts/status.png');

/** Calls every `stepMs` over `spanMs` before NOW; `ok(t)` decides each outcome. */
function series(gateway: string, provider: string, model: string, spanMs: number, stepMs: number, ok: (ago: number) => boolean): HealthObservation[] {
  const out: HealthObservation[] = [];
  for (let ago = spanMs; ago >= MIN; ago -= stepMs) {
    const good = ok(ago);
    out.push({ gateway, provider, model, ok: good, status: good ? 'success' : 'error', latencyMs: good ? 420 : 1500,
      error: good ? null : 'upstream 503', ts: NOW - ago, source: 'passive' });
  }
  return out;
}

/**
 * The human status page in a real browser (Debian's chromium through playwright-core): the page renders the
 * seeded health — overall banner, providers with 30 daily bars, models with 24 hourly bars in the right colours —
 * loads nothing but itself, and a screenshot is saved for people to look at.
 */
describe('e2e: the /status page in headless Chromium', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let server: Server;
  let browser: Browser;
  let base: string;

  before(async function () {
    if (!fs.existsSync(CHROMIUM)) {
      if (process.env.CI) throw new Error(`chromium is required when CI is set (looked for ${CHROMIUM})`);
      console.warn(`\n  NOTICE: ${CHROMIUM} not found; the browser test of /status is SKIPPED (apt-get install -y chromium).\n`);
      return this.skip();
    }
    gw = await startTestGateway({ wiring: { clock: () => NOW } });
    const obs = [
      // 30 days every 2 h; a bad stretch 10 days ago makes one red daily bar
      ...series('openrouter', 'openai', 'openai/gpt-4o', 30 * DAY, 2 * HOUR, (ago) => ago < 10 * DAY - 12 * HOUR || ago > 10 * DAY + 6 * HOUR),
      // the last day every 10 min; failures 3 h ago make amber/red hourly bars, and it failed last
      ...series('openai', 'openai', 'openai/gpt-4o', DAY, 10 * MIN, (ago) => !(ago > 2 * HOUR + 30 * MIN && ago < 3 * HOUR + 30 * MIN) && ago > 15 * MIN),
      ...series('anthropic', 'anthropic', 'anthropic/claude-x', 2 * HOUR, 5 * MIN, (ago) => ago > 40 * MIN),
      ...series('together', 'meta-llama', 'meta-llama/llama-3.1-8b', 12 * HOUR, 15 * MIN, () => true),
      ...series('groq', 'mistralai', 'mistralai/mistral-small', 3 * DAY, DAY, () => true).slice(0, 2), // nothing in 24 h: unknown
    ];
    for (const o of obs) gw.services.recorder.recordHealth(o);
    await gw.services.recorder.flush();
    await gw.services.health.settled();
    server = gw.app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
  });

  after(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await gw?.close();
  });

  it('shows the overall state, every provider and model with uptime bars, loads nothing else, and is screenshotted', async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    const res = await page.goto(`${base}/status`, { waitUntil: 'load' });
    expect(res?.status()).to.equal(200);
    expect(await page.title()).to.equal('Status · Model Gateway');

    // anthropic is down (1 of 4 known providers in outage): a partial outage
    const banner = page.locator('#overall');
    expect(await banner.textContent()).to.equal('Partial outage: some providers are down');
    expect(await banner.getAttribute('data-status')).to.equal('partial_outage');
    expect(await page.locator('#models-healthy b').textContent()).to.equal('2 / 5');
    expect(await page.locator('#providers-up b').textContent()).to.equal('2 / 5');

    const providers = page.locator('#provider-list .row');
    expect(await providers.count()).to.equal(5);
    const pStatus = await providers.evaluateAll((rows) => rows.map((r) => `${r.getAttribute('data-provider')}@${r.getAttribute('data-gateway')}:${r.getAttribute('data-status')}`));
    expect(pStatus).to.deep.equal(['anthropic@anthropic:outage', 'meta-llama@together:operational', 'mistralai@groq:unknown',
      'openai@openai:degraded', 'openai@openrouter:operational']);
    for (let i = 0; i < 5; i++) expect(await providers.nth(i).locator('.bar').count()).to.equal(30);

    const models = page.locator('#model-list .row');
    expect(await models.count()).to.equal(5);
    const claude = page.locator('#model-list .row[data-model="anthropic/claude-x"]');
    expect(await claude.locator('.pill').textContent()).to.equal('unhealthy');
    expect(await claude.locator('.bar').count()).to.equal(24);

    // colours: openrouter's day 10 days ago is red, today green; openai's hourly bar 3 h ago is red, the bars with no calls grey
    const dayBars = page.locator('#provider-list .row[data-gateway="openrouter"] .bar');
    const colour = (l: ReturnType<typeof page.locator>) => l.evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(await colour(dayBars.nth(19))).to.equal('rgb(227, 52, 47)');
    expect(await colour(dayBars.nth(29))).to.equal('rgb(31, 157, 85)');
    expect(await dayBars.nth(19).getAttribute('title')).to.match(/^\d{4}-\d{2}-\d{2}: \d+\.\d{2} % uptime$/);
    const hourBars = page.locator('#model-list .row[data-gateway="openai"] .bar');
    expect(await colour(hourBars.nth(20))).to.equal('rgb(227, 52, 47)');
    const llama = page.locator('#model-list .row[data-model="meta-llama/llama-3.1-8b"] .bar');
    expect(await llama.nth(0).getAttribute('class')).to.equal('bar none');
    expect(await llama.nth(23).getAttribute('class')).to.equal('bar up');

    expect(requested.filter((u) => !u.startsWith('data:'))).to.deep.equal([`${base}/status`]); // no external assets
    fs.mkdirSync(path.dirname(ARTIFACT), { recursive: true });
    await page.screenshot({ path: ARTIFACT, fullPage: true });
    expect(fs.statSync(ARTIFACT).size).to.be.greaterThan(10_000);
    console.log(`      screenshot: ${ARTIFACT}`);
  });
});
