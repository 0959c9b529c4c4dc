import { expect } from 'chai';
import { overviewStatus, providerStatus, systemStatus, type StatusCounts } from '../../src/health/rules.js';

const counts = (healthy: number, degraded: number, unhealthy: number, unknown = 0): StatusCounts => ({ healthy, degraded, unhealthy, unknown });

describe('health rules: provider, system and status-page status at their boundaries', () => {
  it('provider: unknown models are ignored; 25 % degraded is online, more is degraded; any unhealthy degrades; all unhealthy is an outage', () => {
    expect(providerStatus(counts(0, 0, 0, 3))).to.equal('unknown');
    expect(providerStatus(counts(3, 1, 0, 5))).to.equal('online'); // 1 of 4 = 25 %
    expect(providerStatus(counts(5, 2, 0))).to.equal('degraded'); // 2 of 7 > 25 %
    expect(providerStatus(counts(99, 0, 1))).to.equal('degraded');
    expect(providerStatus(counts(0, 0, 2, 4))).to.equal('outage');
    expect(providerStatus(counts(0, 1, 2))).to.equal('degraded');
    expect(providerStatus(counts(1, 0, 0))).to.equal('online');
  });

  it('system: unknown without known providers; unhealthy only when all are in outage; degraded on any degraded or outage', () => {
    expect(systemStatus([])).to.equal('unknown');
    expect(systemStatus(['unknown', 'unknown'])).to.equal('unknown');
    expect(systemStatus(['outage', 'outage', 'unknown'])).to.equal('unhealthy');
    expect(systemStatus(['online', 'outage'])).to.equal('degraded');
    expect(systemStatus(['online', 'degraded'])).to.equal('degraded');
    expect(systemStatus(['online', 'online', 'unknown'])).to.equal('healthy');
  });

  it('status page: operational with no data; partial outage up to half in outage; major beyond half', () => {
    expect(overviewStatus([])).to.equal('operational');
    expect(overviewStatus(['unknown'])).to.equal('operational');
    expect(overviewStatus(['online', 'degraded'])).to.equal('degraded');
    expect(overviewStatus(['online', 'outage'])).to.equal('partial_outage'); // exactly half
    expect(overviewStatus(['online', 'degraded', 'outage', 'unknown'])).to.equal('partial_outage');
    expect(overviewStatus(['online', 'outage', 'outage'])).to.equal('major_outage'); // 2 of 3
    expect(overviewStatus(['outage', 'unknown'])).to.equal('major_outage');
  });
});
