/**
 * The store: one Kysely instance over SQLite (embedded default) or PostgreSQL (DATABASE_URL), migrated on
 * open, with one repository per aggregate.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Kysely, Migrator, SqliteDialect, PostgresDialect, sql } from 'kysely';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { DatabaseConfig } from '../config.js';
import type { Database } from './schema.js';
import { migrationProvider, type Dialect } from './migrations.js';
import { KeyRepo } from './keys.js';
import { CreditRepo } from './credits.js';
import { SessionRepo } from './sessions.js';
import { UsageRepo } from './usage.js';
import { HealthRepo } from './health.js';
import { CatalogRepo } from './catalog.js';
import { LimitRepo } from './limits.js';
import { InstanceRepo } from './instances.js';
import { SqliteWriteBatch } from './sqlite-batch.js';
import { PgCredits } from './pg-credits.js';
import type { RecordWriter } from './pg-records.js';

// PostgreSQL returns int8 and numeric as strings; every such value here fits a JS number (nano-USD up to 9e15).
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

export interface Store {
  db: Kysely<Database>;
  dialect: Dialect;
  keys: KeyRepo;
  credits: CreditRepo;
  sessions: SessionRepo;
  usage: UsageRepo;
  health: HealthRepo;
  catalog: CatalogRepo;
  limits: LimitRepo;
  instances: InstanceRepo;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Kysely prepares every statement on every execution; preparing costs more than running the small statements of
 * the request path (credit hold and settle). Statements are cached by their SQL text — Kysely's compiled SQL uses
 * placeholders, so the set is small and bounded by the code, not by the data.
 */
function withStatementCache(database: SQLite.Database): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = database.prepare.bind(database);
  return new Proxy(database, {
    get(target, prop, receiver) {
      if (prop === 'prepare') {
        return (sql: string) => {
          let stmt = cache.get(sql);
          if (!stmt) {
            stmt = prepare(sql);
            if (cache.size < 2000) cache.set(sql, stmt);
          }
          return stmt;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/**
 * The embedded database's page size: 2 KiB instead of SQLite's 4 KiB. Every commit writes each page it changed to
 * the WAL whole, and a checkpoint copies it again into the database file; a request changes a few rows in many
 * B-trees (its hold, its settle, a usage row in five, a health row), one leaf each, so the bytes follow the page
 * size. With 2 KiB pages `npm run bench:store` writes 16.8 KB a request at c=1 instead of 32.5 (3.9 instead of 7.4 at
 * c=16, in group commits), for 5–15 % more write calls (smaller leaves split more often); the statistics queries
 * over 300,000 usage rows (`npm run bench:stats`) took the same within this VM's noise. 1 KiB pages wrote 9.4 KB a
 * request, but made those queries ~20 % slower: they run on the event loop (docs/PERFORMANCE.md, session 40).
 */
export const SQLITE_PAGE_SIZE = 2048;

function sqliteDb(file: string): { db: Kysely<Database>; batch: SqliteWriteBatch } {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const database = new SQLite(file);
  // Only a database created here takes it: a WAL database's page size cannot change in place.
  database.pragma(`page_size = ${SQLITE_PAGE_SIZE}`);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(database) }) });
  return { db, batch: new SqliteWriteBatch(database, db) };
}

async function postgresDb(url: string, schema?: string): Promise<{ db: Kysely<Database>; pool: pg.Pool }> {
  if (schema) {
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`create schema if not exists ${schema}`);
    } finally {
      await admin.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), pool };
}

/** The migrator of a store opened with `cfg` (openStore runs it to the latest migration). */
export function storeMigrator(db: Kysely<any>, cfg: DatabaseConfig): Migrator {
  // The migrator must look for its bookkeeping tables in the store's own schema (`public` unless one is set): by
  // default it finds them in any schema of the database, and another schema's tables would fool it.
  const schema = cfg.dialect === 'postgres' ? cfg.schema ?? 'public' : undefined;
  return new Migrator({ db, provider: migrationProvider(cfg.dialect), ...(schema ? { migrationTableSchema: schema } : {}) });
}

export async function openStore(cfg: DatabaseConfig): Promise<Store> {
  const { db, batch, pool } = cfg.dialect === 'sqlite' ? { ...sqliteDb(cfg.file), pool: undefined } : { ...(await postgresDb(cfg.url, cfg.schema)), batch: undefined };
  const dialect: Dialect = cfg.dialect;
  const writer: RecordWriter = batch ? { batch } : { pool: pool! };
  const { error } = await storeMigrator(db, cfg).migrateToLatest();
  if (error) {
    await db.destroy();
    throw error instanceof Error ? error : new Error(String(error));
  }
  return {
    db,
    dialect,
    keys: new KeyRepo(db),
    credits: new CreditRepo(db, batch, pool && new PgCredits(pool)),
    sessions: new SessionRepo(db),
    usage: new UsageRepo(db, writer),
    health: new HealthRepo(db, writer),
    catalog: new CatalogRepo(db),
    limits: new LimitRepo(db),
    instances: new InstanceRepo(db),
    async ping() {
      try {
        await sql`select 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      // The checkpoint worker's connection first: the last connection to close checkpoints the WAL away.
      await batch?.close();
      await db.destroy();
    },
  };
}
