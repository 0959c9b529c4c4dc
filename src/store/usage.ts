import type { Insertable, Kysely } from 'kysely';
import type { Database, UsageRecordsTable } from './schema.js';

export type UsageRecord = Insertable<UsageRecordsTable>;

/** Usage records: written in batches by the usage recorder, read by statistics. */
export class UsageRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insertMany(records: UsageRecord[]): Promise<void> {
    // Chunked so one statement stays under SQLite's bound-parameter limit.
    for (let i = 0; i < records.length; i += 500) {
      await this.db.insertInto('usage_records').values(records.slice(i, i + 500)).execute();
    }
  }

  async byRequestId(requestId: string) {
    return this.db.selectFrom('usage_records').selectAll().where('request_id', '=', requestId).execute();
  }

  async forUser(userId: number) {
    return this.db.selectFrom('usage_records').selectAll().where('user_id', '=', userId).orderBy('id').execute();
  }

  async count(): Promise<number> {
    const r = await this.db.selectFrom('usage_records').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }
}
