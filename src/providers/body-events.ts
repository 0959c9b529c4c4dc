/**
 * An upstream stream's body -> internal events, for every adapter (OpenAI, Anthropic, Gemini): each adapter gives
 * an EventSource that turns a piece of the body into events; this reader queues them and hands them out.
 *
 * `next()` hands out queued events as settled promises. When the queue is empty it takes the chunks the body
 * already has; when the body has none, it waits on the body's wake-up (UpstreamBody.onReady): the chunk that
 * arrives is parsed and mapped inside undici's data callback and settles the waiting promise with its first event.
 * That is one promise and one microtask between a chunk's arrival and its event. Reading the body as an async
 * iterator took three (the body's `next()`, its wait, the reader's own async step), and the Anthropic and Gemini
 * adapters' async generators (the SSE reader's, the mapping's, the guard's) about three per event each
 * (docs/PERFORMANCE.md, session 24). The engine's `consume` takes the same queue through `poll()` and `wait(cb)`
 * (PolledEvents) instead: no promise at all, the waiting consumer called from undici's data callback (session 27).
 *
 * The rules: the events before a failure are delivered, then the failure, as `mapFailure` makes it (once), then
 * done; at the source's terminator the reading ends (the rest of the body is read off, so the connection is kept);
 * a body that ends is the source's to finish or to fail, and one that ends with neither is `stream_broken`.
 * `return()` (a consumer stopping early) lets go of the body, after a wait in progress.
 */
import { STREAM_DONE, UpstreamError, type PolledEvents, type StreamEvent } from '../engine/types.js';
import type { UpstreamBody } from './http.js';

export interface EventSource {
  /**
   * Appends to `out` the events one piece of the body completes, or (`undefined`) what the body's end completes,
   * up to the terminator. Throws to fail the stream: what it appended before stays and is delivered first.
   */
  take(chunk: Buffer | undefined, out: StreamEvent[]): void;
  /** The terminator came (or, at the body's end, the source finished the stream): nothing more is read. */
  readonly done: boolean;
}

export class BodyEvents implements AsyncIterableIterator<StreamEvent>, PolledEvents {
  private queue: StreamEvent[] = [];
  private at = 0;
  /** Nothing more will be read: the queue (and then `failure`, if any) is all that is left. */
  private finished = false;
  private failure: unknown;
  /**
   * A piece was taken. The first is taken alone, so its events (the stream's start, the first frame) go out before
   * the pieces that came with it are decoded and parsed; later ones are taken together (UpstreamBody.shiftAll):
   * together from the first on, one stream at a time reached its first byte ~20 µs later (docs/PERFORMANCE.md,
   * session 46).
   */
  private tookOne = false;
  /** The `next()` waiting for the body, and how to settle it. */
  private waiting: Promise<IteratorResult<StreamEvent>> | undefined;
  private settle: ((r: IteratorResult<StreamEvent>) => void) | undefined;
  private refuse: ((err: unknown) => void) | undefined;
  /** The consumer waiting through `wait(cb)`, called once the body brought something. */
  private polledWait: (() => void) | undefined;

  constructor(private readonly body: UpstreamBody, private readonly source: EventSource, private readonly mapFailure: (err: unknown) => unknown) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<StreamEvent>> {
    if (this.waiting) return this.waiting.then(() => this.next(), () => this.next()); // one wait at a time
    if (this.at < this.queue.length || this.fill()) return this.answer();
    return (this.waiting = new Promise<IteratorResult<StreamEvent>>((resolve, reject) => {
      this.settle = resolve;
      this.refuse = reject;
      this.body.onReady(this.wake);
    }));
  }

  /**
   * The next event without a promise, when it is here (PolledEvents, for the engine's `consume`): no promise and no
   * microtask per event, and a wait is a callback from undici's data callback (`wait`). Not while a `next()` waits.
   */
  poll(): StreamEvent | undefined {
    if (this.waiting || !(this.at < this.queue.length || this.fill())) return undefined;
    return this.at < this.queue.length ? this.queue[this.at++] : undefined;
  }

  wait(cb: () => void): boolean {
    if (this.waiting || this.at < this.queue.length || this.fill()) return false;
    this.polledWait = cb;
    this.body.onReady(this.wakePolled);
    return true;
  }

  /**
   * The body's wake-ups (`onReady`), one of each per reader: bound prototype methods, not arrow-function fields. An
   * arrow field is a new closure per reader, and V8 keeps the optimised code of closures only while one of them lives:
   * a full collection while no stream is open (a spell of other traffic, or none) throws it away, and the next streams
   * run unoptimised until it is compiled again (10–20 ms of a compiler thread's CPU each, in every one of the
   * benchmark's burst measures: docs/PERFORMANCE.md, session 38). A prototype method's code lives with its class.
   */
  private readonly wakePolled: () => void = this.onPolledReady.bind(this);
  private readonly wake: () => void = this.onNextReady.bind(this);

  /** The body woke a `wait(cb)`: the consumer called when it brought something, or waiting on. */
  private onPolledReady(): void {
    if (!this.fill()) {
      this.body.onReady(this.wakePolled);
      return;
    }
    const cb = this.polledWait!;
    this.polledWait = undefined;
    cb();
  }

  async return(): Promise<IteratorResult<StreamEvent>> {
    if (this.waiting) await this.waiting.catch(() => undefined);
    if (!this.finished) {
      this.finished = true;
      await this.body.return();
    }
    this.queue = [];
    this.at = 0;
    this.failure = undefined;
    return STREAM_DONE;
  }

  /** The body woke a waiting `next()`: settled with what the body brought, or waiting on when that made no event. */
  private onNextReady(): void {
    if (!this.fill()) {
      this.body.onReady(this.wake);
      return;
    }
    const settle = this.settle!;
    const refuse = this.refuse!;
    this.waiting = this.settle = this.refuse = undefined;
    if (this.at < this.queue.length) settle({ value: this.queue[this.at++], done: false });
    else this.last().then(settle, refuse);
  }

  /** An event from the queue, or after it the failure once, then done. */
  private answer(): Promise<IteratorResult<StreamEvent>> {
    return this.at < this.queue.length ? Promise.resolve({ value: this.queue[this.at++], done: false }) : this.last();
  }

  private last(): Promise<IteratorResult<StreamEvent>> {
    if (this.failure === undefined) return Promise.resolve(STREAM_DONE);
    const failure = this.failure;
    this.failure = undefined;
    return Promise.reject(failure);
  }

  /**
   * Takes the chunks the body has until the queue has an event or nothing more will come (true: `next()` can answer
   * now), or none is here yet (false: wait for the body).
   */
  private fill(): boolean {
    while (this.at >= this.queue.length) {
      if (this.finished) return true;
      this.queue = [];
      this.at = 0;
      const chunk = this.tookOne ? this.body.shiftAll() : this.body.shift();
      if (chunk) {
        this.tookOne = true;
        this.take(chunk);
      } else if (this.body.error !== undefined) this.fail(this.body.error);
      else if (this.body.over) {
        this.take(undefined);
        if (!this.source.done && !this.finished) this.fail(new UpstreamError('stream_broken', 'upstream closed the stream before its end'));
      } else return false;
      if (this.source.done && !this.finished) {
        // the terminator: the rest of the body is read off
        this.finished = true;
        void this.body.return();
      }
    }
    return true;
  }

  private take(chunk: Buffer | undefined): void {
    try {
      this.source.take(chunk, this.queue);
    } catch (err) {
      this.fail(err);
    }
  }

  private fail(err: unknown): void {
    this.finished = true;
    this.failure = this.mapFailure(err);
    void this.body.return();
  }
}

/**
 * A stream failure as its consumer must see it: UpstreamErrors as they are, the client's own abort as it is, and
 * anything else (a socket reset, the body's idle timeout mid-way) as a broken stream. Once events have flowed the
 * engine can no longer fail over, so the kind that matters is "the stream broke".
 */
export function streamFailure(upstream: string, signal?: AbortSignal): (err: unknown) => unknown {
  return (err) => {
    if (err instanceof UpstreamError || signal?.aborted) return err;
    const e = err as { code?: string; message?: string } | undefined;
    return new UpstreamError('stream_broken', `${upstream} stream broke: ${e?.code ?? e?.message ?? String(err)}`);
  };
}
