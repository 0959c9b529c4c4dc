import { dropTestSchemas } from './support/db.js';

/** Root hooks: drop the PostgreSQL schemas the run created. */
after(async () => {
  await dropTestSchemas();
});
