import type { Insertable, Kysely } from 'kysely';
import type { Database, UsageRecordsTable } from './schema.js';
import { rebuildUsageRollups, usageDeltas, writeUsageSqlite } from './rollups.js';
import { writeUsagePg, type RecordWriter } from './pg-records.js';

export type UsageRecord = Insertable<UsageRecordsTable>;

/** Usage records: written in batches by the usage recorder, read by statistics. */
export class UsageRepo {
  /**
   * `batch` on SQLite: the recorder's flush joins the group commit with prepared statements; `pool` on PostgreSQL:
   * it is three named set-based statements (src/store/pg-records.ts).
   */
  constructor(private readonly db: Kysely<Database>, private readonly writer: RecordWriter) {}

  /** Inserts raw rows and folds them into the rollups in one transaction (statistics read both). */
  async insertMany(records: UsageRecord[]): Promise<void> {
    if (!records.length) return;
    const deltas = usageDeltas(records);
    const { writer } = this;
    if ('batch' in writer) return writer.batch.run(() => writeUsageSqlite(writer.batch, records, deltas));
    return writeUsagePg(writer.pool, records, deltas);
  }

  /** Bulk load without rollups (seeding); call rebuildRollups() afterwards. */
  async insertRaw(records: UsageRecord[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (let i = 0; i < records.length; i += 500) {
        await trx.insertInto('usage_records').values(records.slice(i, i + 500)).execute();
      }
    });
  }

  async rebuildRollups(): Promise<void> {
    await this.db.transaction().execute((trx) => rebuildUsageRollups(trx));
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
