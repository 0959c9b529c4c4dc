import type { Handler } from '../src/app.js';
import { ApiError } from '../src/errors.js';
import { loadSpec } from '../src/spec.js';

export const getLiveness: Handler = async (ctx) => {
  const ok = await ctx.deps.store.ping();
  if (!ok) throw new ApiError(503, 'service_unavailable', 'The database does not answer.', 'database_unavailable');
  return {
    body: {
      status: 'ok',
      version: loadSpec().doc.info.version,
      uptime_seconds: Math.round((Date.now() - ctx.deps.services.startedAt.getTime()) / 1000),
      database: 'ok',
    },
  };
};

export const getOpenApiDocument: Handler = () => ({ body: loadSpec().doc });
