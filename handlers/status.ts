/** The public status page and instance diagnostics: thin over services.status (src/health/status.ts). */
import type { Handler } from '../src/app.js';
import { notFound } from '../src/errors.js';

export const getStatus: Handler = async (ctx) => ({ body: await ctx.deps.services.status.overview() });

export const getStatusProviders: Handler = async (ctx) => ({ body: await ctx.deps.services.status.providers() });

export const getStatusModels: Handler = async (ctx) => ({
  body: await ctx.deps.services.status.models({
    provider: ctx.query.provider ?? null, gateway: ctx.query.gateway ?? null, status: ctx.query.status ?? null,
    tier: ctx.query.tier ?? null, limit: ctx.query.limit ?? 100, offset: ctx.query.offset ?? 0,
  }),
});

export const getStatusModel: Handler = async (ctx) => {
  const body = await ctx.deps.services.status.model(ctx.params.provider, ctx.params.model_id);
  if (!body) throw notFound(`Model ${ctx.params.model_id} of provider ${ctx.params.provider} is not tracked.`);
  return { body };
};

export const getStatusDetailed: Handler = async (ctx) => ({ body: await ctx.deps.services.status.detailed() });
