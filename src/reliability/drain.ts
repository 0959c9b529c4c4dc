/**
 * In-flight requests, for a graceful stop: the app counts every request until its handler returned (a stream
 * until its last byte and its settlement), and a stopping process waits for the count to reach zero.
 * Monitoring probes (`GET /health` and `/metrics`: src/app.ts) are counted for the stop, but not as
 * traffic: src/memory.ts tells a quiet process by `busy` and `started`, and a load balancer's or Prometheus's poll
 * every few seconds must not keep it from giving its memory back.
 */
export class InFlight {
  private n = 0;
  /** Requests in flight that are not probes. */
  private work = 0;
  /** Requests that are not probes counted since start (src/memory.ts tells a quiet process by it). */
  private total = 0;
  private waiters = new Set<() => void>();
  /** Set when the process is stopping: new requests are refused with 503. */
  draining = false;

  get count(): number {
    return this.n;
  }

  /** In flight, probes aside. */
  get busy(): number {
    return this.work;
  }

  get started(): number {
    return this.total;
  }

  /** Counts one request (`probe`: a monitoring probe, not traffic); the returned function ends it (idempotent). */
  enter(probe = false): () => void {
    this.n++;
    if (!probe) {
      this.work++;
      this.total++;
    }
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.n--;
      if (!probe) this.work--;
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
