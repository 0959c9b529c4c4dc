/** A gateway app for tests: real store (SQLite or PostgreSQL), real keys, response validation on. */
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openStore, type Store } from '../../src/store/index.js';
import { KeyService } from '../../src/auth.js';
import { buildServices, stopServices, type Services, type ServiceOptions } from '../../src/services.js';
import { createApp, type GatewayApp } from '../../src/app.js';
import { usdToNano } from '../../src/store/credits.js';
import { configFor, type TestDialect } from './db.js';
import { quietUpstreamEnv } from './upstream.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ADMIN_KEY = 'admin-test-key-0123456789';

export interface TestGateway {
  app: GatewayApp;
  store: Store;
  keys: KeyService;
  config: Config;
  services: Services;
  /** Creates a key for a new user with `credits` USD; returns the raw key and ids. */
  newKey(credits?: number, name?: string): Promise<{ key: string; keyId: number; userId: number }>;
  close(): Promise<void>;
}

export async function startTestGateway(opts: { dialect?: TestDialect; env?: Record<string, string>; services?: ServiceOptions; wiring?: ServiceOptions } = {}): Promise<TestGateway> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-data-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    KEY_HASH_SECRET: 'test-secret-0123456789abcdef',
    ADMIN_API_KEY: ADMIN_KEY,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL || 'silent',
    VALIDATE_RESPONSES: 'true',
    // hub and partner facades talk to a local empty upstream unless a test brings its own
    ...(await quietUpstreamEnv()),
    // No background model-list fetches in tests; a test that wants one calls services.catalog.syncNow().
    CATALOG_SYNC_INTERVAL_MS: '0',
    ...opts.env,
  });
  config.database = configFor(opts.dialect ?? 'sqlite');
  const logger = createLogger(config.logLevel);
  const store = await openStore(config.database);
  const keys = new KeyService(store.keys, config.keyHashSecret, config.adminApiKey);
  const services = await buildServices(config, store, logger, { ...opts.services, ...opts.wiring });
  const app = await createApp({ config, store, keys, logger, services });
  return {
    app, store, keys, config, services,
    async newKey(credits = 10, name = 'test') {
      const { key, record } = await keys.create(name);
      if (credits) await store.credits.grant(record.user_id, usdToNano(credits), 'test');
      return { key, keyId: record.id, userId: record.user_id };
    },
    async close() {
      await stopServices(services);
      await store.close();
    },
  };
}
