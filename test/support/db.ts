/**
 * Test databases: a fresh SQLite file per store, and a fresh PostgreSQL schema per store on 127.0.0.1:5432
 * (database `test`). PostgreSQL is required when CI is set; elsewhere, when it is unreachable, the PostgreSQL
 * variants are skipped with a visible notice.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import pg from 'pg';
import type { DatabaseConfig } from '../../src/config.js';
import type { Store } from '../../src/store/index.js';

export const PG_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

let pgState: Promise<boolean> | undefined;

export function postgresAvailable(): Promise<boolean> {
  pgState ??= (async () => {
    const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      return true;
    } catch (err) {
      if (process.env.CI) throw new Error(`PostgreSQL at ${PG_URL} is required when CI is set: ${(err as Error).message}`);
      console.warn(`\n  NOTICE: PostgreSQL at ${PG_URL} is unreachable; PostgreSQL variants of the tests are SKIPPED.\n`);
      return false;
    }
  })();
  return pgState;
}

const created: string[] = [];

export function sqliteConfig(): DatabaseConfig {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-test-'));
  return { dialect: 'sqlite', file: path.join(dir, 'gateway.db') };
}

export function postgresConfig(): DatabaseConfig {
  const schema = `t_${crypto.randomBytes(6).toString('hex')}`;
  created.push(schema);
  return { dialect: 'postgres', url: PG_URL, schema };
}

/** Drops the schemas this process made (root hook, after all tests). */
export async function dropTestSchemas(): Promise<void> {
  if (!created.length) return;
  const client = new pg.Client({ connectionString: PG_URL });
  try {
    await client.connect();
    for (const s of created.splice(0)) await client.query(`drop schema if exists ${s} cascade`);
  } catch {
    /* best effort */
  } finally {
    await client.end().catch(() => {});
  }
}

export const DIALECTS = ['sqlite', 'postgres'] as const;
export type TestDialect = (typeof DIALECTS)[number];

export function configFor(d: TestDialect): DatabaseConfig {
  return d === 'sqlite' ? sqliteConfig() : postgresConfig();
}

/**
 * Another process's debit of `nano` from a user (balance and ledger row in one transaction, so the ledger still
 * equals the balance), written past this store's own balance hint (CreditRepo.likelyCovers).
 */
export async function spendElsewhere(store: Store, userId: number, nano: number): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    await trx.updateTable('credit_balances').set((eb) => ({ balance_nano: eb('balance_nano', '-', nano) })).where('user_id', '=', userId).execute();
    await trx.insertInto('credit_ledger').values({ user_id: userId, delta_nano: -nano, kind: 'adjust', reference: 'elsewhere', created_at: new Date().toISOString() }).execute();
  });
}
