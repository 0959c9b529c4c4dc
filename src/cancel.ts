/**
 * A cancellation signal with AbortSignal's shape — `aborted`, `reason`, `throwIfAborted()` and an `abort`
 * event — for the signals made per request (the client went away, an upstream call's own timeout).
 *
 * Why not AbortController: on Node 20 an AbortSignal is an EventTarget whose prototype is swapped after creation,
 * and such objects are not reclaimed by the young-generation collector: every one is promoted and waits for a
 * full mark-compact (400,000 plain `new AbortController()` here: 9 mark-compacts; the same number of
 * EventTargets: none). Two or three of them per request were a quarter of everything the gateway promoted under
 * load. This class is a plain EventTarget subclass, so it dies young like the request that made it.
 *
 * It is accepted where the code takes an AbortSignal: undici and Node's APIs check the shape (`aborted`,
 * `addEventListener`), not the class. Not for `AbortSignal.any()`, which links only real AbortSignals.
 */
export class Cancellation extends EventTarget {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.dispatchEvent(new Event('abort'));
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
