import { dropTestSchemas } from './support/db.js';
import { dropTestPrefixes } from './support/redis.js';

/** Root hooks: drop the PostgreSQL schemas and the Redis keys the run created. */
after(async () => {
  await dropTestSchemas();
  await dropTestPrefixes();
});
