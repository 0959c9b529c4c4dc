import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, ConfigError } from '../../src/config.js';

describe('reliability settings', () => {
  const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'gw-cfg-'));

  it('defaults: limits 600 rpm / 2M tpm / 100 in flight, prefix gw:, breaker 5 failures / 30 s, no CORS, no trusted proxy', () => {
    const r = loadConfig({ DATA_DIR: dataDir() }).reliability;
    expect(r).to.deep.include({
      limits: { requestsPerMinute: 600, tokensPerMinute: 2_000_000, concurrentRequests: 100 },
      redisPrefix: 'gw:', breakerFailureThreshold: 5, breakerCooldownMs: 30_000, corsOrigins: [], corsAllowCredentials: false,
      instanceHeartbeatMs: 5_000, catalogFile: undefined, trustProxy: false,
    });
  });

  it('reads every setting', () => {
    const c = loadConfig({
      DATA_DIR: dataDir(), RATE_LIMIT_RPM: '0', RATE_LIMIT_TPM: '100', RATE_LIMIT_CONCURRENT: '3', REDIS_PREFIX: 'prod:gw:',
      CORS_ORIGINS: 'https://a.example, https://b.example/', TRUST_PROXY: 'loopback, 10.0.0.0/8', CATALOG_FILE: 'cat.json',
      DATABASE_URL: 'postgres://u@h/db', DATABASE_SCHEMA: 'gateway_eu',
    });
    expect(c.reliability.limits).to.deep.equal({ requestsPerMinute: 0, tokensPerMinute: 100, concurrentRequests: 3 });
    expect(c.reliability.corsOrigins).to.deep.equal(['https://a.example', 'https://b.example']);
    expect(c.reliability.trustProxy).to.equal('loopback, 10.0.0.0/8');
    expect(c.reliability.catalogFile).to.equal(path.resolve('cat.json'));
    expect(c.database).to.deep.equal({ dialect: 'postgres', url: 'postgres://u@h/db', schema: 'gateway_eu' });
    expect(loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: '2' }).reliability.trustProxy).to.equal(2);
  });

  for (const [name, value, extra] of [['RATE_LIMIT_RPM', '-1', {}], ['RATE_LIMIT_CONCURRENT', 'many', {}], ['REDIS_PREFIX', 'has space', {}],
    ['CORS_ORIGINS', 'javascript:alert(1)', {}], ['TRUST_PROXY', '$(rm -rf)', {}], ['DATABASE_SCHEMA', 'x', {}],
    ['DATABASE_SCHEMA', 'Bad-Name', { DATABASE_URL: 'postgres://u@h/db' }], ['INSTANCE_HEARTBEAT_MS', '5', {}]] as const) {
    it(`a bad ${name} (${value}) stops start-up naming it`, () => {
      expect(() => loadConfig({ DATA_DIR: dataDir(), ...extra, [name]: value })).to.throw(ConfigError).with.property('variable', name);
    });
  }
});
