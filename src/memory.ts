/**
 * Memory given back to the system when the gateway is not serving: the C allocator's free pages whenever nothing is in
 * flight, and V8's heap once nothing has been served for a while.
 *
 * The C allocator. Node allocates the bytes of every Buffer with glibc's malloc: a request body's pieces, the body
 * joined, the upstream request's bytes. After a load of large bodies (vision requests of megabytes, long agent
 * conversations) V8's garbage collector frees them all, but glibc keeps the freed pages resident: its heap only shrinks
 * from the top, and one small allocation that lives on above them pins them all. Measured (docs/PERFORMANCE.md,
 * session 26): 20 s of 2 MB requests at concurrency 16 left an idle gateway at 239 MB, 135 MB of it glibc's heap with
 * 6 MB in use; `malloc_trim(0)` took it to 100 MB. Node has no call for it, so native/malloc-trim is a Node-API addon of
 * a few lines, an optional dependency built at install; where it is missing (no compiler) or meaningless (not glibc)
 * the gateway goes on without it. A timer checks every `intervalMs` (MEMORY_TRIM_INTERVAL_MS; 0 turns all of this off)
 * and trims only when no request is in flight and there is likely something to give back: the RSS grew by
 * `growthBytes` since the last trim, or Buffers of that size were freed since (`external` fell). A trim takes ~0.2 ms
 * when there is little to give back and ~6 ms for 70 MB; a request arriving meanwhile waits for it. Under load
 * something is nearly always in flight, so the trims happen in the pauses, where they cost no one.
 *
 * V8's heap. V8's own memory reducer starts memory-reducing collections after 8 s of little allocation, and such a
 * collection also frees the object layouts ("maps") that no live object has at that moment: after a pause in the
 * traffic those are the request path's own (Node's HTTP objects, undici's, the gateway's), and the optimised code that
 * relied on them is thrown away with them and compiled again when the traffic comes back, on the same cores as the
 * traffic (docs/PERFORMANCE.md, sessions 35 and 37: ~180–250 functions each time, a burst of streams slower by
 * ~2.5 ms at its median; session 38 for this replacement). So `npm start` runs Node with `--no-memory-reducer`, and
 * the same collection is asked for here instead (`lowMemory`: v8::Isolate::LowMemoryNotification(),
 * native/malloc-trim's second addon) once nothing has been served for `reduceAfterMs` (MEMORY_REDUCE_AFTER_MS, 30 s),
 * then the C allocator trimmed: once per quiet spell, and at start-up's end. It takes a full collection's time (14 ms
 * for a ~50 MB heap in a test here), on a gateway that has served nothing for that long. Like V8's, it throws the
 * request path's optimised code away (~200 functions): the traffic that comes back runs slower code until V8 has
 * compiled it again, ~1 s of CPU over the next ~1,200 burst streams (docs/PERFORMANCE.md, session 57). That is the
 * price of the idle memory it gives back (40–100 MB after a load), and why the spell is 30 s and not V8's 8.
 *
 * What is served here is the API's traffic: the monitoring probes (`GET /health` and `/metrics`, unauthenticated) that a
 * load balancer, an orchestrator or Prometheus sends every few seconds are not (src/reliability/drain.ts, src/app.ts).
 * Until session 58 they were, and a gateway polled more often than the spell never gave its heap back.
 *
 * The quiet spell grows where traffic pauses. A reduction pays for itself by the time the memory stays given back; when
 * the traffic comes back sooner after it than the spell it waited (a pause of less than twice the spell: a client
 * polling every 40 s, a batch job's gaps), the spell doubles, up to `reduceMaxMs` (MEMORY_REDUCE_MAX_MS, 8 times
 * MEMORY_REDUCE_AFTER_MS by default), so the next such pauses keep the compiled code and the memory the traffic uses
 * anyway instead of paying ~1 s of CPU each (session 58). Traffic that comes back later than that after a reduction
 * sets it back to MEMORY_REDUCE_AFTER_MS. After the traffic ends for good the memory comes back at most
 * `reduceMaxMs` after its last request.
 */
import { createRequire } from 'node:module';
import type { Logger } from './logger.js';
import type { InFlight } from './reliability/drain.js';

/** malloc_trim(0): true when memory was given back. */
export type TrimFn = () => boolean;
/** V8's memory-reducing full collection (v8::Isolate::LowMemoryNotification). */
export type ReduceFn = () => void;

interface Addon { trim: TrimFn; supported: boolean; lowMemory: ReduceFn | null }

function loadAddon(): Addon | null {
  try {
    return createRequire(import.meta.url)('@model-gateway/malloc-trim') as Addon | null;
  } catch {
    return null;
  }
}

/** The addon's trim, or null where it was not built or this is not glibc. */
export function loadTrim(): TrimFn | null {
  const addon = loadAddon();
  return addon?.supported ? addon.trim : null;
}

/** The addon's V8 low-memory call, or null where it was not built. */
export function loadReduce(): ReduceFn | null {
  return loadAddon()?.lowMemory ?? null;
}

export interface MemoryReading { rss: number; external: number }

const readMemory = (): MemoryReading => {
  const m = process.memoryUsage();
  return { rss: m.rss, external: m.external };
};

export interface MemoryTrimmerOptions {
  intervalMs: number;
  /** Nothing served for this long: V8's heap reduced (0: never). */
  reduceAfterMs?: number;
  /** The longest the quiet spell grows to (above; default 8 × reduceAfterMs, at least reduceAfterMs). */
  reduceMaxMs?: number;
  growthBytes?: number;
  /** Injected in tests; undefined: the addon's (null: none). */
  trim?: TrimFn | null;
  reduce?: ReduceFn | null;
  read?: () => MemoryReading;
  now?: () => number;
}

export class MemoryTrimmer {
  private timer?: NodeJS.Timeout;
  /** The reading right after the last trim (or at start). */
  private last?: MemoryReading;
  private trimFn: TrimFn | null = null;
  private reduceFn: ReduceFn | null = null;
  /** `inflight.started` at the last tick, and when a request was last seen in flight or started (probes aside). */
  private seen = 0;
  private busyAt = 0;
  private readonly reduceAfterMs: number;
  private readonly reduceMaxMs: number;
  /** The quiet spell now: reduceAfterMs, doubled after each reduction the traffic came back soon after (above). */
  private spellMs: number;
  /**
   * When the last reduction was made, while nothing has been served since; undefined when something has (or the
   * process started): a reduction is then due once the spell has passed.
   */
  private reducedAt: number | undefined;
  /** Trims done, and the bytes of RSS they gave back; reductions done, and theirs (for the logs, metrics and tests). */
  trims = 0;
  released = 0;
  reductions = 0;
  reducedBytes = 0;

  constructor(
    private readonly inflight: Pick<InFlight, 'busy' | 'started'>,
    private readonly logger: Pick<Logger, 'debug'>,
    private readonly opts: MemoryTrimmerOptions,
  ) {
    this.reduceAfterMs = opts.reduceAfterMs ?? 30_000;
    this.reduceMaxMs = Math.max(this.reduceAfterMs, opts.reduceMaxMs ?? 8 * this.reduceAfterMs);
    this.spellMs = this.reduceAfterMs;
  }

  /** How long nothing must be served before the next reduction (for the metrics and tests). */
  get quietSpellMs(): number {
    return this.spellMs;
  }

  /** True when V8's heap is reduced here (the addon is built and MEMORY_REDUCE_AFTER_MS is not 0); set by start(). */
  get reduces(): boolean {
    return !!this.reduceFn;
  }

  /** Starts the timer; false when there is nothing to do (turned off, or neither call on this system). */
  start(): boolean {
    this.trimFn = this.opts.trim === undefined ? loadTrim() : this.opts.trim;
    const reduce = this.opts.reduce === undefined ? loadReduce() : this.opts.reduce;
    this.reduceFn = this.reduceAfterMs > 0 ? reduce : null;
    if ((!this.trimFn && !this.reduceFn) || this.opts.intervalMs <= 0) {
      this.logger.debug({ available: !!this.trimFn, reduce: !!this.reduceFn, intervalMs: this.opts.intervalMs }, 'memory trim off');
      this.trimFn = this.reduceFn = null;
      return false;
    }
    this.last = this.read();
    this.seen = this.inflight.started;
    this.busyAt = this.now();
    this.timer = setInterval(() => this.tick(), this.opts.intervalMs);
    this.timer.unref();
    return true;
  }

  private read(): MemoryReading {
    return (this.opts.read ?? readMemory)();
  }

  private now(): number {
    return this.opts.now ? this.opts.now() : performance.now();
  }

  /**
   * One check: V8's heap reduced (and then the C allocator trimmed) when nothing has been served for the quiet spell
   * since the last reduction; else the C allocator trimmed when nothing is in flight and the readings say there is
   * something to give back. Monitoring probes are neither (src/reliability/drain.ts). Answers what it did.
   */
  tick(): 'reduced' | 'trimmed' | false {
    const now = this.now();
    const started = this.inflight.started;
    if (this.inflight.busy !== 0 || started !== this.seen) {
      this.seen = started;
      this.busyAt = now;
      if (this.reducedAt !== undefined) this.adapt(now - this.reducedAt);
      if (this.inflight.busy !== 0) return false;
    }
    if (this.reduceFn && this.reducedAt === undefined && now - this.busyAt >= this.spellMs) {
      const reduce = this.reduceFn;
      const trim = this.trimFn;
      this.reductions++;
      this.reducedBytes += this.giveBack(this.read(), () => { reduce(); trim?.(); }, 'memory reduced');
      this.reducedAt = now;
      return 'reduced';
    }
    if (!this.trimFn) return false;
    const reading = this.read();
    const growth = this.opts.growthBytes ?? 16 * 2 ** 20;
    const last = this.last ?? reading;
    if (reading.rss - last.rss < growth && last.external - reading.external < growth) return false;
    this.trims++;
    this.released += this.giveBack(reading, this.trimFn, 'memory trimmed');
    return 'trimmed';
  }

  /**
   * The traffic came back `heldMs` after the last reduction: sooner than the spell it waited, the spell doubles (up to
   * reduceMaxMs); later, it is reduceAfterMs again.
   */
  private adapt(heldMs: number): void {
    this.reducedAt = undefined;
    const spell = heldMs < this.spellMs ? Math.min(this.reduceMaxMs, 2 * this.spellMs) : this.reduceAfterMs;
    if (spell === this.spellMs) return;
    this.logger.debug({ heldMs: Math.round(heldMs), quietSpellMs: spell }, 'memory reduction: quiet spell changed');
    this.spellMs = spell;
  }

  /** Runs `release`, logs what it took and gave, keeps the reading after it; the RSS given back, in bytes. */
  private giveBack(before: MemoryReading, release: () => unknown, message: string): number {
    const t0 = process.hrtime.bigint();
    release();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    this.last = this.read();
    this.logger.debug({ ms: Math.round(ms * 100) / 100, rssBefore: before.rss, rssAfter: this.last.rss }, message);
    return Math.max(0, before.rss - this.last.rss);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
