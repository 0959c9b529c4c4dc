/**
 * Real gateway processes for scale-out and crash tests: a CATALOG_FILE that points real gateway ids at the
 * simulator, and the settings every process of one test shares (database, Redis prefix, key-hash secret).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DatabaseConfig } from '../../src/config.js';
import { openStore, type Store } from '../../src/store/index.js';
import { KeyService } from '../../src/auth.js';
import { usdToNano } from '../../src/store/credits.js';

export const SECRET = 'cluster-secret-0123456789abcdef';

/** A catalog file: gateway `openai` at the simulator, one offer per [modelId, simulator model], $1/M in, $2/M out. */
export function catalogFile(simUrl: string, offers: Array<[string, string]>): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gw-catalog-')), 'catalog.json');
  fs.writeFileSync(file, JSON.stringify({
    gateways: [{ id: 'openai', url: `${simUrl}/v1`, key: 'sk-sim-cluster-key' }],
    offers: offers.map(([modelId, upstreamModel]) => ({
      gateway: 'openai', upstreamModel, modelId, pricing: { prompt: 1e-6, completion: 2e-6 }, maxOutputTokens: 1000,
    })),
  }));
  return file;
}

/** Environment of a gateway process on `db` (SQLite file or PostgreSQL schema). */
export function dbEnv(db: DatabaseConfig): Record<string, string> {
  return db.dialect === 'sqlite'
    ? { DATABASE_URL: `sqlite:${db.file}` }
    : { DATABASE_URL: db.url, ...(db.schema ? { DATABASE_SCHEMA: db.schema } : {}) };
}

/** Opens the test's own connection to the processes' database and makes a key with `usd` credits. */
export async function seedKey(db: DatabaseConfig, usd: number): Promise<{ store: Store; key: string; userId: number; keyId: number }> {
  const store = await openStore(db);
  const keys = new KeyService(store.keys, SECRET, undefined);
  const { key, record } = await keys.create('cluster');
  await store.credits.grant(record.user_id, usdToNano(usd), 'test');
  return { store, key, userId: record.user_id, keyId: record.id };
}

/** Every user's ledger sum equals their balance plus their open holds (and no balance is negative). */
export async function ledgerMatchesBalances(store: Store): Promise<{ users: number; mismatched: number[]; negative: number[] }> {
  const rows = await store.db.selectFrom('credit_balances').select(['user_id', 'balance_nano']).execute();
  const mismatched: number[] = [];
  const negative: number[] = [];
  for (const r of rows) {
    const id = Number(r.user_id);
    if (Number(r.balance_nano) < 0) negative.push(id);
    if ((await store.credits.ledgerSum(id)) !== Number(r.balance_nano) + (await store.credits.openHoldSum(id))) mismatched.push(id);
  }
  return { users: rows.length, mismatched, negative };
}
