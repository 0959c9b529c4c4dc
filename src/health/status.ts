/**
 * The public status page (`/v1/status/*`, and the HTML page at /status) and the instance diagnostics of
 * `/v1/status/detailed`, built on the health records and, for request counts, the usage statistics.
 */
import type { Config } from '../config.js';
import { upstreamSetting } from '../config.js';
import type { Store } from '../store/index.js';
import type { Recorder } from '../engine/recorder.js';
import { gatewayState, type CircuitBreakers } from '../engine/breaker.js';
import type { GatewayDirectory, UsageStats } from '../stats/service.js';
import { round } from '../stats/facts.js';
import { loadSpec } from '../spec.js';
import { windows, type RecordQuery, type RecordRow } from './records.js';
import { aggregate, groupByProvider, uptimeOf, type HealthService } from './service.js';
import { OVERVIEW_MESSAGES, overviewStatus, publicProviderStatus } from './rules.js';
import { redisPing } from './redis-ping.js';
import { renderStatusPage, type PageData } from './page.js';

export interface StatusDeps {
  health: HealthService;
  stats: UsageStats;
  directory: GatewayDirectory | null;
  config: Config;
  store: Store;
  recorder: Recorder;
  /** The circuit breakers, for each gateway's `breaker_state` (its worst model's). */
  breakers: CircuitBreakers;
  monitoringActive: () => boolean;
  startedAt: Date;
}

const iso = (t: number) => new Date(t).toISOString();

function modelEntry(r: RecordRow) {
  const up = uptimeOf(r);
  return {
    model_id: r.model, provider: r.provider, gateway: r.gateway, status: r.status, tier: r.tier,
    uptime_percentage: up === null ? null : round(up, 2),
    avg_response_time_ms: r.latency_n24 > 0 ? round(r.latency_sum24 / r.latency_n24, 2) : null,
    last_checked: iso(r.last_checked),
  };
}

export class StatusService {
  constructor(private readonly d: StatusDeps) {}

  private get now() {
    return this.d.health.clock();
  }

  /** Provider entries and the records they came from (one records query). */
  private async providerEntries() {
    const { rows } = await this.d.health.records();
    const since = windows(this.now).h24;
    const entries = groupByProvider(rows).map((g) => {
      const a = aggregate(g.rows, since);
      return {
        provider: g.provider, gateway: g.gateway, status: publicProviderStatus(a.status), total_models: g.rows.length,
        healthy_models: a.counts.healthy, uptime_percentage: a.uptime, avg_response_time_ms: a.avgLatency,
        last_checked: a.lastChecked === null ? null : iso(a.lastChecked),
      };
    });
    return { rows, entries, since };
  }

  async providers() {
    return (await this.providerEntries()).entries;
  }

  private overall(entries: Array<{ status: string }>) {
    return overviewStatus(entries.map((e) => (e.status === 'operational' ? 'online' : e.status) as 'online' | 'degraded' | 'outage' | 'unknown'));
  }

  async overview() {
    const [{ rows, entries, since }, recent] = await Promise.all([this.providerEntries(), this.d.stats.recent('24h')]);
    const status = this.overall(entries);
    return {
      status, message: OVERVIEW_MESSAGES[status],
      uptime_percentage: aggregate(rows, since).uptime,
      total_providers: entries.length,
      operational_providers: entries.filter((e) => e.status === 'operational').length,
      total_models: rows.length,
      healthy_models: rows.filter((r) => r.status === 'healthy').length,
      requests_last_24h: recent.requests,
      avg_response_time_ms: recent.avg_latency_ms,
      last_updated: iso(this.now),
    };
  }

  /** The HTML status page (at most `maxModels` model rows). */
  async page(maxModels = 500): Promise<string> {
    const [{ rows, entries, since }, recent, bars] = await Promise.all([this.providerEntries(), this.d.stats.recent('24h'), this.d.health.uptimeBars()]);
    const status = this.overall(entries);
    const now = this.now;
    const data: PageData = {
      overview: {
        status, message: OVERVIEW_MESSAGES[status], uptime_percentage: aggregate(rows, since).uptime,
        total_providers: entries.length, operational_providers: entries.filter((e) => e.status === 'operational').length,
        total_models: rows.length, healthy_models: rows.filter((r) => r.status === 'healthy').length,
        requests_last_24h: recent.requests, avg_response_time_ms: recent.avg_latency_ms, last_updated: iso(now),
      },
      providers: entries.map((e) => ({ ...e, bars: bars.daily.get(`${e.provider}\u0000${e.gateway}`) ?? Array(30).fill(null) })),
      models: rows.slice(0, maxModels).map((r) => ({ ...modelEntry(r), bars: bars.hourly.get(`${r.gateway}\u0000${r.model}`) ?? Array(24).fill(null) })),
      firstDay: now - (now % 86_400_000) - 29 * 86_400_000,
      firstHour: now - (now % 3_600_000) - 23 * 3_600_000,
    };
    return renderStatusPage(data);
  }

  async models(q: Pick<RecordQuery, 'provider' | 'gateway' | 'status' | 'tier' | 'limit' | 'offset'>) {
    const { rows } = await this.d.health.records(q);
    return rows.map(modelEntry);
  }

  /** undefined when the model is not tracked. */
  async model(provider: string, modelId: string) {
    const rows = await this.d.health.modelRecords(provider, modelId);
    if (!rows.length) return undefined;
    const r = rows[0];
    const [uptime, incidents] = await Promise.all([
      this.d.health.uptimeWindows(r),
      this.d.health.incidents.list(r, this.now - 7 * 86_400_000, 10),
    ]);
    const e = modelEntry(r);
    return {
      model_id: r.model, provider: r.provider, gateway: r.gateway, status: r.status, tier: r.tier, uptime,
      avg_response_time_ms: e.avg_response_time_ms,
      success_rate: r.calls24 > 0 ? round(r.ok24 / r.calls24, 4) : null,
      last_checked: e.last_checked,
      last_success: r.last_success === null ? null : iso(r.last_success),
      last_failure: r.last_failure === null ? null : iso(r.last_failure),
      recent_incidents: incidents,
    };
  }

  async detailed() {
    const { config, store, recorder, breakers, directory } = this.d;
    const [{ rows, entries }, dbOk, redisOk] = await Promise.all([
      this.providerEntries(), store.ping(), config.redisUrl ? redisPing(config.redisUrl) : Promise.resolve(null),
    ]);
    const ids = new Set<string>([...(directory?.gateways().map((g) => g.id) ?? []), ...breakers.snapshot().map((b) => b.gateway), ...rows.map((r) => r.gateway)]);
    const configured = (id: string) => {
      try {
        const s = upstreamSetting(config, id);
        return !!(s.apiKey || s.baseUrl);
      } catch {
        return false; // a malformed <ID>_BASE_URL makes the gateway unusable
      }
    };
    const mem = process.memoryUsage();
    return {
      status: this.overall(entries),
      version: loadSpec().doc.info.version,
      uptime_seconds: Math.max(0, Math.round((Date.now() - this.d.startedAt.getTime()) / 1000)),
      started_at: this.d.startedAt.toISOString(),
      database: { dialect: store.dialect, ok: dbOk },
      redis: { configured: !!config.redisUrl, ok: redisOk },
      gateways: [...ids].sort().map((id) => ({
        id, configured: configured(id), breaker_state: gatewayState(breakers, id), cached_models: directory?.cachedModels?.(id) ?? 0,
      })),
      usage_buffer: { pending_records: recorder.pending },
      memory: { rss_bytes: mem.rss, heap_used_bytes: mem.heapUsed },
      monitoring_active: this.d.monitoringActive(),
    };
  }
}
