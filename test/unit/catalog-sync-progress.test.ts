/**
 * A catalog sync reports progress: a start line naming the gateways, one line per gateway as it ends with a
 * running `done/of` count (a failure included), and a summary. Upstreams: the simulator for OpenAI and
 * Anthropic, and a closed local port for Groq.
 */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Catalog } from '../../src/catalog/catalog.js';
import { loadSeeds } from '../../src/catalog/seeds.js';
import { loadConfig } from '../../src/config.js';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { freePort } from '../support/proc.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

describe('catalog sync progress', () => {
  let sim: Simulator;
  before(async () => { sim = await startSimulator({ apiKey: 'k' }); });
  after(async () => { await sim?.close(); });

  it('logs started, each gateway with done/of as it ends, and finished with the failures', async () => {
    const closed = await freePort();
    const config = loadConfig({
      DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-sync-')), KEY_HASH_SECRET: 'test-secret-0123456789abcdef',
      CATALOG_SYNC_INTERVAL_MS: '0', CATALOG_HEALTH_REFRESH_MS: '0', CATALOG_SYNC_TIMEOUT_MS: '5000',
      OPENAI_API_KEY: 'k', OPENAI_BASE_URL: `${sim.url}/v1`,
      ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: sim.url,
      GROQ_API_KEY: 'k', GROQ_BASE_URL: `http://127.0.0.1:${closed}/v1`,
    });
    const lines: any[] = [];
    const sink = new Writable({ write(chunk, _enc, cb) { lines.push(JSON.parse(String(chunk))); cb(); } });
    const catalog = new Catalog({ config, logger: pino({ level: 'info', base: undefined }, sink), seeds: loadSeeds() });
    const results = await catalog.syncNow();
    await catalog.stop();

    expect(results.map((r) => [r.gateway, r.ok]).sort()).to.deep.equal([['anthropic', true], ['groq', false], ['openai', true]]);
    const msgs = lines.map((l) => l.msg);
    expect(msgs[0]).to.equal('catalog sync: started');
    expect([...lines[0].gateways].sort()).to.deep.equal(['anthropic', 'groq', 'openai']);
    const ended = lines.filter((l) => l.progress);
    expect(ended.map((l) => l.progress)).to.deep.equal(['1/3', '2/3', '3/3']);
    expect(ended.map((l) => l.gateway).sort()).to.deep.equal(['anthropic', 'groq', 'openai']);
    const groq = ended.find((l) => l.gateway === 'groq');
    expect(groq.msg).to.equal('catalog sync failed: serving the last known list');
    expect(ended.find((l) => l.gateway === 'openai').models).to.be.greaterThan(0);
    const last = lines.at(-1);
    expect(last).to.include({ msg: 'catalog sync: finished', ok: 2 });
    expect(last.failed).to.deep.equal(['groq']);
  });
});
