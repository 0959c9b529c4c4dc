/**
 * A per-minute call counter over a LimitBackend, for limits that must hold across instances (search augment:
 * guests per client address, keys per key). Fails open like the per-key limits.
 */
import type { CallWindow } from '../tools/augment.js';
import type { LimitBackend } from './backend.js';

export class SharedCallWindow implements CallWindow {
  constructor(
    private readonly backend: LimitBackend,
    private readonly name: string,
    private readonly perMinute: number,
    private readonly onError: (err: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  async take(key: string): Promise<number | null> {
    if (this.perMinute <= 0) return null;
    try {
      const w = await this.backend.take(`${this.name}:${key}`, this.perMinute, this.now());
      return w.allowed ? null : Math.max(1, Math.ceil(w.resetMs / 1000));
    } catch (err) {
      this.onError(err);
      return null;
    }
  }
}
