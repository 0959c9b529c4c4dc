/**
 * The C allocator's free memory given back to the system when the gateway is not serving.
 *
 * Node allocates the bytes of every Buffer with glibc's malloc: a request body's pieces, the body joined, the
 * upstream request's bytes. After a load of large bodies (vision requests of megabytes, long agent conversations)
 * V8's garbage collector frees them all, but glibc keeps the freed pages resident: its heap only shrinks from the top,
 * and one small allocation that lives on above them pins them all. Measured (docs/PERFORMANCE.md, session 26): 20 s of
 * 2 MB requests at concurrency 16 left an idle gateway at 239 MB, 135 MB of it glibc's heap with 6 MB in use;
 * `malloc_trim(0)` took it to 100 MB. Node has no call for it, so native/malloc-trim is a Node-API addon of a few
 * lines, an optional dependency built at install; where it is missing (no compiler) or meaningless (not glibc) the
 * gateway goes on without it.
 *
 * When: a timer checks every `intervalMs` (MEMORY_TRIM_INTERVAL_MS; 0 turns it off) and trims only when no request is
 * in flight and there is likely something to give back: the RSS grew by `growthBytes` since the last trim, or
 * Buffers of that size were freed since (`external` fell). A trim takes ~0.2 ms when there is little to give back and
 * ~6 ms for 70 MB; a request arriving meanwhile waits for it. Under load something is nearly always in flight, so
 * the trims happen in the pauses, where they cost no one.
 */
import { createRequire } from 'node:module';
import type { Logger } from './logger.js';
import type { InFlight } from './reliability/drain.js';

/** malloc_trim(0): true when memory was given back. */
export type TrimFn = () => boolean;

interface Addon { trim: TrimFn; supported: boolean }

/** The addon's trim, or null where it was not built or this is not glibc. */
export function loadTrim(): TrimFn | null {
  try {
    const addon = createRequire(import.meta.url)('@model-gateway/malloc-trim') as Addon | null;
    return addon?.supported ? addon.trim : null;
  } catch {
    return null;
  }
}

export interface MemoryReading { rss: number; external: number }

const readMemory = (): MemoryReading => {
  const m = process.memoryUsage();
  return { rss: m.rss, external: m.external };
};

export class MemoryTrimmer {
  private timer?: NodeJS.Timeout;
  /** The reading right after the last trim (or at start). */
  private last?: MemoryReading;
  /** Trims done, and the bytes of RSS they gave back (for the logs and tests). */
  trims = 0;
  released = 0;

  constructor(
    private readonly inflight: Pick<InFlight, 'count'>,
    private readonly logger: Pick<Logger, 'debug'>,
    private readonly opts: { intervalMs: number; growthBytes?: number; trim?: TrimFn | null; read?: () => MemoryReading },
  ) {}

  /** Starts the timer; false when there is nothing to do (turned off, or no trim on this system). */
  start(): boolean {
    const trim = this.opts.trim === undefined ? loadTrim() : this.opts.trim;
    if (!trim || this.opts.intervalMs <= 0) {
      this.logger.debug({ available: !!trim, intervalMs: this.opts.intervalMs }, 'memory trim off');
      return false;
    }
    this.last = (this.opts.read ?? readMemory)();
    this.timer = setInterval(() => this.tick(trim), this.opts.intervalMs);
    this.timer.unref();
    return true;
  }

  /** One check: trims when nothing is in flight and the memory readings say there is something to give back. */
  tick(trim: TrimFn): boolean {
    if (this.inflight.count !== 0) return false;
    const read = this.opts.read ?? readMemory;
    const now = read();
    const growth = this.opts.growthBytes ?? 16 * 2 ** 20;
    const last = this.last ?? now;
    if (now.rss - last.rss < growth && last.external - now.external < growth) return false;
    const t0 = process.hrtime.bigint();
    trim();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    this.last = read();
    this.trims++;
    this.released += Math.max(0, now.rss - this.last.rss);
    this.logger.debug({ ms: Math.round(ms * 100) / 100, rssBefore: now.rss, rssAfter: this.last.rss }, 'memory trimmed');
    return true;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
