/**
 * Prometheus metrics (served at /metrics). One registry per gateway instance (no module globals), with typed
 * helpers: the app counts HTTP requests, the recorder's flushes feed tokens and cost, and the engine calls
 * `upstreamRequest` after every upstream attempt and `breakerState` on every circuit-breaker transition.
 */
import client from 'prom-client';
import type { UpstreamErrorKind } from './engine/types.js';
import type { UsageRecord } from './store/usage.js';

export type BreakerState = 'closed' | 'open' | 'half_open';
/** How an upstream attempt ended: success, the client went away, or the UpstreamError kind. */
export type UpstreamOutcome = 'success' | 'cancelled' | UpstreamErrorKind;

const BREAKER_VALUE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };
// seconds; upstream calls of LLMs run from tens of ms to minutes
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/**
 * How often the event-loop delay histogram (nodejs_eventloop_lag_*) samples, in ms. prom-client's default, 10 ms, is
 * a timer that wakes the process 100 times a second: 4.6 ms of CPU per second in a process doing nothing else, more
 * than half of an idle gateway's (docs/PERFORMANCE.md, session 12). At 50 ms a 15-second scrape still sees 300
 * samples, and a stall longer than 50 ms is still caught by every sample it delays.
 */
const EVENT_LOOP_SAMPLE_MS = 50;

export class Metrics {
  readonly registry = new client.Registry();
  private readonly breakers = new Map<string, BreakerState>();
  private readonly httpRequests: client.Counter<'operation' | 'status'>;
  private readonly httpDuration: client.Histogram<'operation'>;
  private readonly upstreamRequests: client.Counter<'gateway' | 'outcome'>;
  private readonly upstreamDuration: client.Histogram<'gateway' | 'outcome'>;
  private readonly upstreamErrors: client.Counter<'gateway' | 'kind'>;
  private readonly tokens: client.Counter<'gateway' | 'provider' | 'type'>;
  private readonly cost: client.Counter<'gateway' | 'provider'>;
  private readonly usageRequests: client.Counter<'gateway' | 'provider' | 'status'>;
  private readonly breaker: client.Gauge<'gateway'>;
  private readonly probes: client.Counter<'gateway' | 'outcome'>;

  constructor(opts: { defaultMetrics?: boolean; pendingRecords?: () => number; monitoringActive?: () => boolean } = {}) {
    const registers = [this.registry];
    // standard process_* and nodejs_* names; the event-loop delay sampled every EVENT_LOOP_SAMPLE_MS
    if (opts.defaultMetrics ?? true) client.collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    this.httpRequests = new client.Counter({ name: 'gateway_http_requests_total', help: 'HTTP requests answered, by operationId and status code.',
      labelNames: ['operation', 'status'], registers });
    this.httpDuration = new client.Histogram({ name: 'gateway_http_request_duration_seconds', help: 'Time to answer an HTTP request (streams: until the end).',
      labelNames: ['operation'], buckets: LATENCY_BUCKETS, registers });
    this.upstreamRequests = new client.Counter({ name: 'gateway_upstream_requests_total', help: 'Upstream attempts, by gateway and outcome.',
      labelNames: ['gateway', 'outcome'], registers });
    this.upstreamDuration = new client.Histogram({ name: 'gateway_upstream_request_duration_seconds', help: 'Upstream attempt latency.',
      labelNames: ['gateway', 'outcome'], buckets: LATENCY_BUCKETS, registers });
    this.upstreamErrors = new client.Counter({ name: 'gateway_upstream_errors_total', help: 'Failed upstream attempts, by gateway and error kind.',
      labelNames: ['gateway', 'kind'], registers });
    this.tokens = new client.Counter({ name: 'gateway_tokens_total', help: 'Tokens of recorded requests, by type (prompt, completion, cached).',
      labelNames: ['gateway', 'provider', 'type'], registers });
    this.cost = new client.Counter({ name: 'gateway_cost_usd_total', help: 'Cost charged for recorded requests, in USD.',
      labelNames: ['gateway', 'provider'], registers });
    this.usageRequests = new client.Counter({ name: 'gateway_usage_records_total', help: 'Recorded client requests, by final status.',
      labelNames: ['gateway', 'provider', 'status'], registers });
    this.breaker = new client.Gauge({ name: 'gateway_circuit_breaker_state', help: 'Circuit breaker per gateway: 0 closed, 1 half-open, 2 open.',
      labelNames: ['gateway'], registers });
    this.probes = new client.Counter({ name: 'gateway_health_probes_total', help: 'Active health probes, by gateway and outcome (ok, failed).',
      labelNames: ['gateway', 'outcome'], registers });
    if (opts.pendingRecords) {
      const pending = opts.pendingRecords;
      new client.Gauge({ name: 'gateway_recorder_pending_records', help: 'Usage and health records buffered, not yet written.', registers,
        collect() { this.set(pending()); } });
    }
    if (opts.monitoringActive) {
      const active = opts.monitoringActive;
      new client.Gauge({ name: 'gateway_health_monitor_active', help: '1 when the active probe monitor runs.', registers,
        collect() { this.set(active() ? 1 : 0); } });
    }
  }

  httpRequest(operation: string, status: number, ms: number): void {
    this.httpRequests.inc({ operation, status: String(status) });
    this.httpDuration.observe({ operation }, ms / 1000);
  }

  /** One upstream attempt (the engine calls it for every attempt, failed-over ones included). */
  upstreamRequest(gateway: string, outcome: UpstreamOutcome, ms: number): void {
    this.upstreamRequests.inc({ gateway, outcome });
    this.upstreamDuration.observe({ gateway, outcome }, ms / 1000);
    if (outcome !== 'success' && outcome !== 'cancelled') this.upstreamErrors.inc({ gateway, kind: outcome });
  }

  /** Written usage records (the recorder's flushes): tokens, cost and requests by final status. */
  usage(records: readonly UsageRecord[]): void {
    // Summed per label set first: a flush carries hundreds of records of a few gateways, and each counter
    // increment hashes its labels.
    const sums = new Map<string, { gateway: string; provider: string; status: string; requests: number; prompt: number; completion: number; cached: number; cost: number }>();
    for (const r of records) {
      const k = `${r.gateway}\u0000${r.provider}\u0000${r.status}`;
      let s = sums.get(k);
      if (!s) sums.set(k, (s = { gateway: r.gateway, provider: r.provider, status: r.status, requests: 0, prompt: 0, completion: 0, cached: 0, cost: 0 }));
      s.requests += 1;
      s.prompt += r.prompt_tokens ?? 0;
      s.completion += r.completion_tokens ?? 0;
      s.cached += r.cached_tokens ?? 0;
      s.cost += r.cost_nano ?? 0;
    }
    for (const s of sums.values()) {
      const l = { gateway: s.gateway, provider: s.provider };
      this.usageRequests.inc({ ...l, status: s.status }, s.requests);
      if (s.prompt) this.tokens.inc({ ...l, type: 'prompt' }, s.prompt);
      if (s.completion) this.tokens.inc({ ...l, type: 'completion' }, s.completion);
      if (s.cached) this.tokens.inc({ ...l, type: 'cached' }, s.cached);
      if (s.cost) this.cost.inc(l, s.cost / 1e9);
    }
  }

  breakerState(gateway: string, state: BreakerState): void {
    this.breakers.set(gateway, state);
    this.breaker.set({ gateway }, BREAKER_VALUE[state]);
  }

  /** Last state the engine reported per gateway (gateways never reported are closed). */
  breakerStateOf(gateway: string): BreakerState {
    return this.breakers.get(gateway) ?? 'closed';
  }

  knownBreakers(): string[] {
    return [...this.breakers.keys()];
  }

  probe(gateway: string, ok: boolean): void {
    this.probes.inc({ gateway, outcome: ok ? 'ok' : 'failed' });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
