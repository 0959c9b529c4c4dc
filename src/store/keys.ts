import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export interface KeyRecord {
  id: number;
  user_id: number;
  name: string;
  key_prefix: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

const COLS = ['id', 'user_id', 'name', 'key_prefix', 'created_at', 'revoked_at', 'last_used_at'] as const;

/** API keys, stored only as their HMAC; users own keys, balances and sessions. */
export class KeyRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async createUser(name: string): Promise<number> {
    const row = await this.db.insertInto('users').values({ name, created_at: new Date().toISOString() })
      .returning('id').executeTakeFirstOrThrow();
    return Number(row.id);
  }

  async userExists(userId: number): Promise<boolean> {
    return !!(await this.db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst());
  }

  async insert(userId: number, name: string, keyHash: string, keyPrefix: string): Promise<KeyRecord> {
    const row = await this.db.insertInto('api_keys').values({
      user_id: userId, name, key_hash: keyHash, key_prefix: keyPrefix, created_at: new Date().toISOString(),
      revoked_at: null, last_used_at: null,
    }).returning(COLS).executeTakeFirstOrThrow();
    return norm(row);
  }

  async findByHash(keyHash: string): Promise<(KeyRecord & { key_hash: string }) | undefined> {
    const row = await this.db.selectFrom('api_keys').select([...COLS, 'key_hash'])
      .where('key_hash', '=', keyHash).executeTakeFirst();
    return row ? { ...norm(row), key_hash: row.key_hash } : undefined;
  }

  async get(id: number): Promise<KeyRecord | undefined> {
    const row = await this.db.selectFrom('api_keys').select(COLS).where('id', '=', id).executeTakeFirst();
    return row ? norm(row) : undefined;
  }

  async list(): Promise<KeyRecord[]> {
    return (await this.db.selectFrom('api_keys').select(COLS).orderBy('id').execute()).map(norm);
  }

  /** Returns false when the key does not exist or was already revoked. */
  async revoke(id: number): Promise<boolean> {
    const res = await this.db.updateTable('api_keys').set({ revoked_at: new Date().toISOString() })
      .where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async touch(id: number): Promise<void> {
    await this.db.updateTable('api_keys').set({ last_used_at: new Date().toISOString() }).where('id', '=', id).execute();
  }
}

function norm<T extends { id: number; user_id: number }>(row: T): T {
  return { ...row, id: Number(row.id), user_id: Number(row.user_id) };
}
