/**
 * In-flight requests, for a graceful stop: the app counts every request until its handler returned (a stream
 * until its last byte and its settlement), and a stopping process waits for the count to reach zero.
 */
export class InFlight {
  private n = 0;
  /** Requests counted since start (src/memory.ts tells a quiet process by it). */
  private total = 0;
  private waiters = new Set<() => void>();
  /** Set when the process is stopping: new requests are refused with 503. */
  draining = false;

  get count(): number {
    return this.n;
  }

  get started(): number {
    return this.total;
  }

  /** Counts one request; the returned function ends it (idempotent). */
  enter(): () => void {
    this.n++;
    this.total++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.n--;
      if (this.n === 0) for (const w of [...this.waiters]) w();
    };
  }

  /** Resolves true once no request is in flight, false if `timeoutMs` passes first. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.n === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve(ok);
      };
      const wake = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.waiters.add(wake);
    });
  }
}
