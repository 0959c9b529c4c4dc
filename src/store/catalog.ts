import type { Insertable, Kysely, Selectable } from 'kysely';
import type { CatalogOffersTable, CatalogSyncTable, Database } from './schema.js';
import { HOUR_MS } from './rollups.js';

export type DiscoveredRow = Omit<Insertable<CatalogOffersTable>, 'gateway' | 'synced_at'>;
export type CatalogOfferRow = Selectable<CatalogOffersTable>;
export type CatalogSyncRow = Selectable<CatalogSyncTable>;

/** Discovered model lists and sync state (catalog discovery), plus the request counts behind popularity. */
export class CatalogRepo {
  constructor(private readonly db: Kysely<Database>) {}

  /** Replaces one gateway's stored list with a fresh one and records the successful sync, atomically. */
  async replaceGateway(gateway: string, rows: DiscoveredRow[], at: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('catalog_offers').where('gateway', '=', gateway).execute();
      // Chunked so one statement stays under SQLite's bound-parameter limit.
      for (let i = 0; i < rows.length; i += 200) {
        await trx.insertInto('catalog_offers')
          .values(rows.slice(i, i + 200).map((r) => ({ ...r, gateway, synced_at: at })))
          .execute();
      }
      await trx.insertInto('catalog_sync')
        .values({ gateway, last_sync: at, last_attempt: at, model_count: rows.length })
        .onConflict((oc) => oc.column('gateway').doUpdateSet({ last_sync: at, last_attempt: at, model_count: rows.length }))
        .execute();
    });
  }

  /** Records a failed attempt; the stored list and its last successful sync stay as they were. */
  async markAttempt(gateway: string, at: number): Promise<void> {
    await this.db.insertInto('catalog_sync')
      .values({ gateway, last_sync: null, last_attempt: at, model_count: 0 })
      .onConflict((oc) => oc.column('gateway').doUpdateSet({ last_attempt: at }))
      .execute();
  }

  async offers(): Promise<CatalogOfferRow[]> {
    return this.db.selectFrom('catalog_offers').selectAll().orderBy('gateway').orderBy('upstream_model').execute();
  }

  async syncState(): Promise<CatalogSyncRow[]> {
    return this.db.selectFrom('catalog_sync').selectAll().orderBy('gateway').execute();
  }

  /** Requests recorded per (gateway, model) since `sinceMs` (epoch ms). */
  /**
   * Requests per (gateway, model) since `sinceMs`, from the hourly usage rollup (the hour holding `sinceMs` counts
   * whole): the catalog reloads this every few seconds, and a scan of a week of raw usage rows grew with traffic
   * (tens of milliseconds of a blocked event loop at 200,000 rows).
   */
  async requestCounts(sinceMs: number): Promise<Array<{ gateway: string; model: string; n: number }>> {
    const rows = await this.db.selectFrom('usage_rollup')
      .select(['gateway', 'model', (eb) => eb.fn.sum<number>('requests').as('n')])
      .where('grain', '=', 'hour')
      .where('period', '>=', sinceMs - (sinceMs % HOUR_MS))
      .groupBy(['gateway', 'model'])
      .execute();
    return rows.map((r) => ({ gateway: r.gateway, model: r.model, n: Number(r.n) }));
  }
}
