/**
 * A cancellation signal with AbortSignal's shape — `aborted`, `reason`, `throwIfAborted()` and an `abort`
 * event — for the signals made per request (the client went away, an upstream call's own timeout).
 *
 * Why not AbortController: on Node 20 an AbortSignal is an EventTarget whose prototype is swapped after creation,
 * and such objects are not reclaimed by the young-generation collector: every one is promoted and waits for a
 * full mark-compact (400,000 plain `new AbortController()` here: 9 mark-compacts; the same number of
 * EventTargets: none). Two or three of them per request were a quarter of everything the gateway promoted under
 * load. This class dies young like the request that made it.
 *
 * It is not an EventTarget either (it was one until session 24): Node's EventTarget makes two Maps per object and
 * an options check and a listener record per `addEventListener`, for signals that are made three per stream and
 * almost never abort (docs/PERFORMANCE.md, session 24). The listeners here are a plain list, called once with an
 * `abort` Event when it aborts, as `{ once: true }` listeners, with the signal as `this`; one listener added twice
 * is kept once, as EventTarget does.
 *
 * It is accepted where the code takes an AbortSignal: undici and Node's APIs check the shape (`aborted`,
 * `addEventListener`), not the class. Not for `AbortSignal.any()`, which links only real AbortSignals.
 */
type AbortListener = ((this: Cancellation, ev: Event) => void) | { handleEvent(ev: Event): void };

export class Cancellation {
  aborted = false;
  reason: unknown = undefined;
  private listeners: AbortListener[] | undefined = undefined;

  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (!listeners) return;
    const ev = new Event('abort');
    for (const l of listeners) {
      // A listener that throws does not stop the others (as EventTarget reports it: an uncaught exception).
      try {
        if (typeof l === 'function') l.call(this, ev);
        else l.handleEvent(ev);
      } catch (err) {
        process.nextTick(() => { throw err; });
      }
    }
  }

  /** Only `abort` listeners are kept (the one event this signal sends); none once it has aborted. */
  addEventListener(type: string, listener: AbortListener | null, _options?: unknown): void {
    if (type !== 'abort' || !listener || this.aborted) return;
    const ls = (this.listeners ??= []);
    if (!ls.includes(listener)) ls.push(listener);
  }

  removeEventListener(type: string, listener: AbortListener | null, _options?: unknown): void {
    const ls = this.listeners;
    if (type !== 'abort' || !ls || !listener) return;
    const i = ls.indexOf(listener);
    if (i >= 0) ls.splice(i, 1);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** This object typed as the AbortSignal it stands in for. */
  get signal(): AbortSignal {
    return this as unknown as AbortSignal;
  }
}

/** A signal that never aborts, for calls that have no client to follow (the total timeout still applies). */
export const NEVER: AbortSignal = new AbortController().signal;
