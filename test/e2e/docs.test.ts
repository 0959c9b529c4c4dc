/**
 * /docs (Swagger UI from swagger-ui-dist, offline) and the contract in both encodings. The page is loaded in
 * headless Chromium under the CSP src/docs.ts sends: every request must stay on this origin and succeed, no CSP
 * violation or script error may occur, every tag of the spec must be shown, and "Try it out" must reach the API.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { parse } from 'yaml';
import type { Browser } from 'playwright-core';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { launchChromium } from '../support/browser.js';
import { ROOT } from '../support/proc.js';
import { loadSpec, SPEC_PATH } from '../../src/spec.js';
import { DOCS_CSP } from '../../src/docs.js';

const SCREENSHOT = path.join(ROOT, 'test/artifacts/docs.png');

describe('e2e: /docs, /openapi.json and /openapi.yaml', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let server: http.Server;
  let origin: string;

  before(async () => {
    gw = await startTestGateway();
    server = gw.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server?.closeAllConnections();
    server?.close();
    await gw?.close();
  });

  it('/openapi.yaml is the hand-written file byte for byte, and the same document as /openapi.json', async () => {
    const y = await request(gw.app).get('/openapi.yaml').buffer(true).parse((res, cb) => {
      let s = '';
      res.on('data', (d: Buffer) => (s += d));
      res.on('end', () => cb(null, s));
    });
    expect(y.status).to.equal(200);
    expect(y.headers['content-type']).to.match(/^application\/yaml/);
    expect(y.body).to.equal(fs.readFileSync(SPEC_PATH, 'utf8'));
    const j = await request(gw.app).get('/openapi.json');
    expect(parse(y.body as string)).to.deep.equal(j.body);
    expect(j.body.paths['/openapi.yaml'].get.operationId).to.equal('getOpenApiYaml');
  });

  it('serves the page and only the assets it needs, each with the docs CSP', async () => {
    for (const p of ['/docs', '/docs/']) {
      const page = await request(gw.app).get(p);
      expect(page.status, p).to.equal(200);
      expect(page.headers['content-type']).to.match(/^text\/html/);
      expect(page.headers['content-security-policy']).to.equal(DOCS_CSP);
      expect(page.text).to.contain('<div id="swagger-ui"></div>').and.contain('/docs/swagger-ui-bundle.js');
    }
    const init = await request(gw.app).get('/docs/initializer.js');
    expect(init.headers['content-type']).to.match(/javascript/);
    expect(init.text).to.contain("url: '/openapi.json'");
    const bundle = await request(gw.app).get('/docs/swagger-ui-bundle.js');
    expect(bundle.status).to.equal(200);
    expect(bundle.headers['content-type']).to.match(/javascript/);
    expect(Number(bundle.headers['content-length'])).to.be.greaterThan(100_000);
    // The package's other files are not served: the API's 404 body answers.
    for (const p of ['/docs/package.json', '/docs/index.html', '/docs/swagger-initializer.js', '/docs/..%2Fpackage.json']) {
      const r = await request(gw.app).get(p);
      expect(r.status, p).to.equal(404);
      expect(r.body.error.code, p).to.equal('route_not_found');
    }
  });

  describe('in headless Chromium', () => {
    let browser: Browser | null = null;
    before(async function () {
      browser = await launchChromium();
      if (!browser) this.skip();
    });
    after(async () => {
      await browser?.close();
    });

    it('loads with no failed request, no CSP violation, every spec tag shown, and "Try it out" reaching /health', async () => {
      const page = await browser!.newPage({ viewport: { width: 1280, height: 1400 } });
      const problems: string[] = [];
      const urls: string[] = [];
      page.on('request', (r) => urls.push(r.url()));
      page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
      page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
      page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));

      // CSP violations, as the page sees them (console messages are not the only place they surface).
      await page.addInitScript(() => {
        (window as any).__csp = [];
        document.addEventListener('securitypolicyviolation', (e) => (window as any).__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
      });
      const res = await page.goto(`${origin}/docs`, { waitUntil: 'networkidle' });
      expect(res?.status()).to.equal(200);
      await page.waitForSelector('.opblock-tag-section', { timeout: 30_000 });

      const { doc } = loadSpec();
      const specTags = (doc.tags as Array<{ name: string }>).map((t) => t.name);
      const shown = await page.$$eval('.opblock-tag', (els) => els.map((e) => e.getAttribute('data-tag')));
      expect(shown).to.deep.equal(specTags);
      const title = await page.textContent('.info .title');
      expect(title).to.contain(String(doc.info.title)).and.contain('2.0.3');

      fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: false }); // the top: title, servers, the first tags
      console.log(`      screenshot: ${SCREENSHOT}`);

      // "Try it out" on GET /health: the page calls this origin (connect-src 'self') and shows the answer.
      const op = page.locator('#operations-health-getLiveness');
      await op.locator('.opblock-summary').click();
      await op.locator('button.try-out__btn').click();
      await op.locator('button.execute').click();
      const status = op.locator('.live-responses-table .response .response-col_status').first();
      await status.waitFor({ timeout: 15_000 });
      expect((await status.textContent())?.trim()).to.equal('200');
      expect(await op.locator('.live-responses-table .microlight').first().textContent()).to.contain('"version": "2.0.3"');

      expect(await page.evaluate(() => (window as any).__csp)).to.deep.equal([]);
      expect(problems).to.deep.equal([]);
      expect(urls.filter((u) => !u.startsWith(origin + '/'))).to.deep.equal([]);
      expect(urls).to.include(`${origin}/openapi.json`).and.include(`${origin}/health`);
      await page.close();
    });
  });
});
