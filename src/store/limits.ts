import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** A key's own limits; null = the configured default, 0 = no limit. */
export interface KeyLimits {
  requests_per_minute: number | null;
  tokens_per_minute: number | null;
  concurrent_requests: number | null;
}

/** Per-key overrides of the default rate limits (migration 0004_limits). */
export class LimitRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async get(keyId: number): Promise<KeyLimits | undefined> {
    const row = await this.db.selectFrom('api_key_limits').select(['requests_per_minute', 'tokens_per_minute', 'concurrent_requests'])
      .where('key_id', '=', keyId).executeTakeFirst();
    return row ? { requests_per_minute: num(row.requests_per_minute), tokens_per_minute: num(row.tokens_per_minute), concurrent_requests: num(row.concurrent_requests) } : undefined;
  }

  /** Replaces the key's overrides (all-null removes them). */
  async set(keyId: number, limits: KeyLimits): Promise<void> {
    const values = { ...limits, updated_at: new Date().toISOString() };
    await this.db.insertInto('api_key_limits').values({ key_id: keyId, ...values })
      .onConflict((oc) => oc.column('key_id').doUpdateSet(values)).execute();
  }
}

const num = (v: number | null): number | null => (v === null || v === undefined ? null : Number(v));
