import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

export interface HealthObservation {
  gateway: string;
  model: string;
  provider: string;
  ok: boolean;
  /** success | error | timeout | rate_limited | … */
  status: string;
  latencyMs: number | null;
  error: string | null;
  ts: number;
  source: 'passive' | 'probe';
}

/** Per (gateway, model) health counters plus a history of observations for uptime windows. */
export class HealthRepo {
  constructor(private readonly db: Kysely<Database>) {}

  /** Applies a batch of observations in one transaction (the recorder batches them off the request path). */
  async record(batch: HealthObservation[]): Promise<void> {
    if (!batch.length) return;
    await this.db.transaction().execute(async (trx) => {
      for (const o of batch) {
        const ok = o.ok ? 1 : 0;
        const lat = o.latencyMs ?? 0;
        await trx.insertInto('model_health').values({
          gateway: o.gateway, model: o.model, provider: o.provider, calls: 1, successes: ok, errors: 1 - ok,
          total_latency_ms: lat, consecutive_failures: 1 - ok, last_status: o.status, last_error: o.error,
          last_latency_ms: o.latencyMs, last_checked: o.ts, last_success: o.ok ? o.ts : null, last_failure: o.ok ? null : o.ts,
        }).onConflict((oc) => oc.columns(['gateway', 'model']).doUpdateSet({
          calls: sql`model_health.calls + 1`,
          successes: sql`model_health.successes + ${ok}`,
          errors: sql`model_health.errors + ${1 - ok}`,
          total_latency_ms: sql`model_health.total_latency_ms + ${lat}`,
          consecutive_failures: o.ok ? 0 : sql`model_health.consecutive_failures + 1`,
          last_status: o.status,
          last_error: o.ok ? sql`model_health.last_error` : o.error,
          last_latency_ms: o.latencyMs,
          last_checked: o.ts,
          last_success: o.ok ? o.ts : sql`model_health.last_success`,
          last_failure: o.ok ? sql`model_health.last_failure` : o.ts,
        })).execute();
      }
      await trx.insertInto('model_health_history').values(batch.map((o) => ({
        gateway: o.gateway, model: o.model, ts: o.ts, ok: o.ok ? 1 : 0, status: o.status, latency_ms: o.latencyMs, source: o.source,
      }))).execute();
    });
  }

  async get(gateway: string, model: string) {
    return this.db.selectFrom('model_health').selectAll().where('gateway', '=', gateway).where('model', '=', model).executeTakeFirst();
  }

  async all() {
    return this.db.selectFrom('model_health').selectAll().orderBy('gateway').orderBy('model').execute();
  }
}
