/**
 * Prometheus metrics (served at /metrics). One registry per gateway instance (no module globals), with typed
 * helpers: the app counts HTTP requests, the recorder's flushes feed tokens and cost, the engine calls
 * `upstreamRequest` after every upstream attempt, and the circuit breakers' states are read when /metrics is
 * scraped.
 *
 * prom-client keeps the registry, the text format and the process's default metrics. The gateway's own counters
 * and histograms are the small classes below, registered in the same registry and printed by it: prom-client's
 * `inc` and `observe` validate and hash the label object on every call (its labelled children too), ~7 µs per
 * request in the gateway's profile (docs/PERFORMANCE.md, session 17); these find a series through one Map per
 * label value.
 */
import client from 'prom-client';
import type { UpstreamErrorKind } from './engine/types.js';
import { gatewayState, type BreakerState, type CircuitBreakers } from './engine/breaker.js';
import type { UsageRecord } from './store/usage.js';

/** How an upstream attempt ended: success, the client went away, or the UpstreamError kind. */
export type UpstreamOutcome = 'success' | 'cancelled' | UpstreamErrorKind;

/** What the engine reports to (src/engine/chat.ts): one call per upstream attempt. */
export interface AttemptMetrics {
  upstreamRequest(gateway: string, outcome: UpstreamOutcome, ms: number): void;
}

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

/** A label's value; numbers (an HTTP status) print as they are. One label is always given one type: 200 and '200' would be two series. */
type LabelValue = string | number;
/** One value (a counter's) or one histogram's buckets, per set of label values. */
interface CounterSeries { labels: Record<string, LabelValue>; value: number }
interface HistogramSeries { labels: Record<string, LabelValue>; counts: number[]; sum: number; count: number }
/** What prom-client's registry reads from a metric to print it (`get` of its own metric classes). */
interface MetricValue { labels: Record<string, LabelValue>; value: number; metricName?: string; sharedLabels?: Record<string, LabelValue> }

/**
 * Series found by their label values, in the order of `labelNames`: one nested Map per label, so a lookup builds
 * no key string and no label object (the label object is made once, with the series).
 */
abstract class Labelled<S> {
  private readonly root = new Map<LabelValue, unknown>();
  protected readonly all: S[] = [];

  constructor(readonly name: string, readonly help: string, private readonly labelNames: readonly string[], registry: client.Registry) {
    registry.registerMetric(this as unknown as client.Metric);
  }

  protected abstract make(labels: Record<string, LabelValue>): S;

  /** The series of these label values (one per label name), made on first use. */
  protected at(values: readonly LabelValue[]): S {
    let map = this.root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = map.get(values[i]) as Map<LabelValue, unknown> | undefined;
      if (!next) map.set(values[i], (next = new Map()));
      map = next;
    }
    let s = map.get(values[last]) as S | undefined;
    if (!s) {
      const labels: Record<string, LabelValue> = {};
      this.labelNames.forEach((n, i) => { labels[n] = values[i]; });
      map.set(values[last], (s = this.make(labels)));
      this.all.push(s);
    }
    return s;
  }

  reset(): void {
    this.root.clear();
    this.all.length = 0;
  }
}

export class LabelledCounter extends Labelled<CounterSeries> {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  /** `divisor`: the counter counts in units of 1/divisor (cost in nano-USD, exact in integers) and prints the quotient. */
  constructor(name: string, help: string, labelNames: readonly string[], registry: client.Registry, private readonly divisor = 1) {
    super(name, help, labelNames, registry);
  }
  protected make(labels: Record<string, LabelValue>): CounterSeries { return { labels, value: 0 }; }
  inc(values: readonly LabelValue[], by = 1): void {
    if (!(by >= 0) || by === Infinity) throw new RangeError(`${this.name}: a counter goes up by a finite amount, not ${by}`);
    this.at(values).value += by;
  }
  async get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.all.map((s): MetricValue => ({ labels: s.labels, value: s.value / this.divisor })) };
  }
}

export class LabelledHistogram extends Labelled<HistogramSeries> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  constructor(name: string, help: string, labelNames: readonly string[], private readonly buckets: readonly number[], registry: client.Registry) {
    super(name, help, labelNames, registry);
  }
  protected make(labels: Record<string, LabelValue>): HistogramSeries { return { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }; }
  observe(values: readonly LabelValue[], v: number): void {
    if (!Number.isFinite(v)) throw new RangeError(`${this.name}: not a finite observation: ${v}`);
    const s = this.at(values);
    const { buckets } = this;
    for (let i = 0; i < buckets.length; i++) {
      if (v <= buckets[i]) {
        s.counts[i] += 1;
        break;
      }
    }
    s.sum += v;
    s.count += 1;
  }
  /** As prom-client prints a histogram: cumulative `_bucket{le}` lines, then `+Inf`, `_sum` and `_count` per series. */
  async get() {
    const bucket = `${this.name}_bucket`;
    const values: MetricValue[] = [];
    for (const s of this.all) {
      let acc = 0;
      this.buckets.forEach((le, i) => {
        acc += s.counts[i];
        values.push({ labels: { le }, value: acc, metricName: bucket, sharedLabels: s.labels });
      });
      values.push({ labels: { le: '+Inf' }, value: s.count, metricName: bucket, sharedLabels: s.labels },
        { labels: {}, value: s.sum, metricName: `${this.name}_sum`, sharedLabels: s.labels },
        { labels: {}, value: s.count, metricName: `${this.name}_count`, sharedLabels: s.labels });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

export interface MetricsOptions {
  defaultMetrics?: boolean;
  pendingRecords?: () => number;
  monitoringActive?: () => boolean;
  /** The circuit breakers as this process sees them (read at each scrape for gateway_circuit_breaker_state). */
  breakers?: Pick<CircuitBreakers, 'snapshot'>;
}

export class Metrics implements AttemptMetrics {
  readonly registry = new client.Registry();
  private readonly httpRequests: LabelledCounter;
  private readonly httpDuration: LabelledHistogram;
  private readonly upstreamRequests: LabelledCounter;
  private readonly upstreamDuration: LabelledHistogram;
  private readonly upstreamErrors: LabelledCounter;
  private readonly tokens: LabelledCounter;
  private readonly cost: LabelledCounter;
  private readonly usageRequests: LabelledCounter;
  private readonly probes: LabelledCounter;

  constructor(opts: MetricsOptions = {}) {
    const r = this.registry;
    const registers = [r];
    // standard process_* and nodejs_* names; the event-loop delay sampled every EVENT_LOOP_SAMPLE_MS
    if (opts.defaultMetrics ?? true) client.collectDefaultMetrics({ register: r, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    this.httpRequests = new LabelledCounter('gateway_http_requests_total', 'HTTP requests answered, by operationId and status code.', ['operation', 'status'], r);
    this.httpDuration = new LabelledHistogram('gateway_http_request_duration_seconds', 'Time to answer an HTTP request (streams: until the end).', ['operation'], LATENCY_BUCKETS, r);
    this.upstreamRequests = new LabelledCounter('gateway_upstream_requests_total', 'Upstream attempts, by gateway and outcome.', ['gateway', 'outcome'], r);
    this.upstreamDuration = new LabelledHistogram('gateway_upstream_request_duration_seconds', 'Upstream attempt latency.', ['gateway', 'outcome'], LATENCY_BUCKETS, r);
    this.upstreamErrors = new LabelledCounter('gateway_upstream_errors_total', 'Failed upstream attempts, by gateway and error kind.', ['gateway', 'kind'], r);
    this.tokens = new LabelledCounter('gateway_tokens_total', 'Tokens of recorded requests, by type (prompt, completion, cached).', ['gateway', 'provider', 'type'], r);
    this.cost = new LabelledCounter('gateway_cost_usd_total', 'Cost charged for recorded requests, in USD.', ['gateway', 'provider'], r, 1e9);
    this.usageRequests = new LabelledCounter('gateway_usage_records_total', 'Recorded client requests, by final status.', ['gateway', 'provider', 'status'], r);
    this.probes = new LabelledCounter('gateway_health_probes_total', 'Active health probes, by gateway and outcome (ok, failed).', ['gateway', 'outcome'], r);
    if (opts.breakers) {
      const breakers = opts.breakers;
      // A gateway keeps its series once it has had one (0 when it closed again): Prometheus sees the recovery.
      const seen = new Set<string>();
      new client.Gauge({ name: 'gateway_circuit_breaker_state', help: 'Circuit breaker per gateway: 0 closed, 1 half-open, 2 open (its worst model\'s).',
        labelNames: ['gateway'], registers,
        collect() {
          for (const b of breakers.snapshot()) seen.add(b.gateway);
          this.reset();
          for (const gateway of seen) this.set({ gateway }, BREAKER_VALUE[gatewayState(breakers, gateway)]);
        } });
    }
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

  /** The memory trimmer's counts (src/memory.ts), read at each scrape. */
  watchMemoryTrim(source: { readonly trims: number; readonly released: number; readonly reductions: number; readonly reducedBytes: number; readonly quietSpellMs: number }): void {
    const registers = [this.registry];
    new client.Counter({ name: 'gateway_memory_trims_total', help: 'Times the C allocator\'s free memory was given back to the system while nothing was in flight.', registers,
      collect() { this.reset(); this.inc(source.trims); } });
    new client.Counter({ name: 'gateway_memory_trim_released_bytes_total', help: 'Resident memory those trims gave back, in bytes.', registers,
      collect() { this.reset(); this.inc(source.released); } });
    new client.Counter({ name: 'gateway_memory_reductions_total', help: 'Times V8\'s heap was reduced (a memory-reducing full collection, then a trim) after nothing was served for MEMORY_REDUCE_AFTER_MS.', registers,
      collect() { this.reset(); this.inc(source.reductions); } });
    new client.Counter({ name: 'gateway_memory_reduction_released_bytes_total', help: 'Resident memory those reductions gave back, in bytes.', registers,
      collect() { this.reset(); this.inc(source.reducedBytes); } });
    new client.Gauge({ name: 'gateway_memory_quiet_spell_seconds', help: 'How long nothing must be served before the next reduction: MEMORY_REDUCE_AFTER_MS, doubled (up to MEMORY_REDUCE_MAX_MS) while the traffic comes back soon after reductions; 0 when the heap is never reduced.', registers,
      collect() { this.set(source.quietSpellMs / 1000); } });
  }

  httpRequest(operation: string, status: number, ms: number): void {
    this.httpRequests.inc([operation, status]);
    this.httpDuration.observe([operation], ms / 1000);
  }

  /** One upstream attempt (the engine calls it for every attempt, failed-over ones included). */
  upstreamRequest(gateway: string, outcome: UpstreamOutcome, ms: number): void {
    this.upstreamRequests.inc([gateway, outcome]);
    this.upstreamDuration.observe([gateway, outcome], ms / 1000);
    if (outcome !== 'success' && outcome !== 'cancelled') this.upstreamErrors.inc([gateway, outcome]);
  }

  /** Written usage records (the recorder's flushes): tokens, cost and requests by final status. */
  usage(records: readonly UsageRecord[]): void {
    for (const r of records) {
      const { gateway, provider } = r;
      this.usageRequests.inc([gateway, provider, r.status]);
      if (r.prompt_tokens) this.tokens.inc([gateway, provider, 'prompt'], r.prompt_tokens);
      if (r.completion_tokens) this.tokens.inc([gateway, provider, 'completion'], r.completion_tokens);
      if (r.cached_tokens) this.tokens.inc([gateway, provider, 'cached'], r.cached_tokens);
      if (r.cost_nano) this.cost.inc([gateway, provider], r.cost_nano);
    }
  }

  probe(gateway: string, ok: boolean): void {
    this.probes.inc([gateway, ok ? 'ok' : 'failed']);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
