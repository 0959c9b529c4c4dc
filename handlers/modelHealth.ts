/** Model health (bearer) and the health summary: thin over services.health (src/health/service.ts). */
import type { Handler } from '../src/app.js';
import { notFound } from '../src/errors.js';

export const listModelHealth: Handler = async (ctx) => ({
  body: await ctx.deps.services.health.list(ctx.query.provider ?? null, ctx.query.status ?? null, ctx.query.limit ?? 100, ctx.query.offset ?? 0),
});

export const getModelHealth: Handler = async (ctx) => {
  const body = await ctx.deps.services.health.detail(ctx.params.provider, ctx.params.model);
  if (!body) throw notFound(`No health record for model ${ctx.params.model} of provider ${ctx.params.provider}.`);
  return { body };
};

export const listUnhealthyModels: Handler = async (ctx) => ({
  body: await ctx.deps.services.health.unhealthy(ctx.query.error_threshold ?? 0.2, ctx.query.min_calls ?? 10),
});

export const getModelHealthStats: Handler = async (ctx) => ({ body: await ctx.deps.services.health.stats() });

export const getProviderHealthSummary: Handler = async (ctx) => {
  const body = await ctx.deps.services.health.providerSummary(ctx.params.provider);
  if (!body) throw notFound(`No health records for provider ${ctx.params.provider}.`);
  return { body };
};

export const listHealthProviders: Handler = async (ctx) => {
  const providers = await ctx.deps.services.health.providers();
  return { body: { providers, total: providers.length } };
};

export const getHealthSummary: Handler = async (ctx) => ({ body: await ctx.deps.services.health.summary() });
