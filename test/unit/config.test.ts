import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, upstreamSetting, ConfigError } from '../../src/config.js';

describe('config', () => {
  const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'gw-cfg-'));

  it('has working defaults: port 8000, SQLite under ./data', () => {
    const dir = dataDir();
    const c = loadConfig({ DATA_DIR: dir });
    expect(c.port).to.equal(8000);
    expect(c.database).to.deep.equal({ dialect: 'sqlite', file: path.join(dir, 'gateway.db') });
    expect(c.keyHashSecret).to.have.length.greaterThan(30);
    // the generated secret is persisted and reused
    expect(loadConfig({ DATA_DIR: dir }).keyHashSecret).to.equal(c.keyHashSecret);
  });

  it('reads DATABASE_URL for PostgreSQL and sqlite: files', () => {
    expect(loadConfig({ DATA_DIR: dataDir(), DATABASE_URL: 'postgres://u@h:5432/db' }).database).to.deep.equal({ dialect: 'postgres', url: 'postgres://u@h:5432/db' });
    expect(loadConfig({ DATA_DIR: dataDir(), DATABASE_URL: 'sqlite:/tmp/x.db' }).database).to.deep.equal({ dialect: 'sqlite', file: '/tmp/x.db' });
  });

  for (const [name, value] of [['PORT', 'eighty'], ['PORT', '70000'], ['LOG_LEVEL', 'loud'], ['DATABASE_URL', 'mysql://x'],
    ['BODY_LIMIT', 'huge'], ['VALIDATE_RESPONSES', 'maybe'], ['REDIS_URL', 'http://x'], ['KEY_HASH_SECRET', 'short'], ['PRICE_MARKUP', '-1'],
    ['RECORDS_FLUSH_MS', '0'], ['RECORDS_FLUSH_MS', '60001'], ['RECORDS_FLUSH_MS', 'soon']] as const) {
    it(`a bad ${name} stops start-up with a message naming it`, () => {
      expect(() => loadConfig({ DATA_DIR: dataDir(), [name]: value })).to.throw(ConfigError).with.property('variable', name);
    });
  }

  it('RECORDS_FLUSH_MS: the usage and health records are written 250 ms after the first waits, or as set (1 ms to 60 s)', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).recordsFlushMs).to.equal(250);
    expect(loadConfig({ DATA_DIR: dataDir(), RECORDS_FLUSH_MS: '5000' }).recordsFlushMs).to.equal(5000);
  });

  it('per-gateway key and base URL: ID upper-cased with - as _', () => {
    const c = loadConfig({ DATA_DIR: dataDir(), FIREWORKS_AI_API_KEY: 'k1', FIREWORKS_AI_BASE_URL: 'http://127.0.0.1:9/v1' });
    expect(upstreamSetting(c, 'fireworks-ai')).to.deep.equal({ apiKey: 'k1', baseUrl: 'http://127.0.0.1:9/v1' });
    expect(upstreamSetting(c, 'groq')).to.deep.equal({ apiKey: undefined, baseUrl: undefined });
  });
});
