/** Usage statistics: thin over services.stats (src/stats/service.ts). */
import type { Handler } from '../src/app.js';
import { notFound } from '../src/errors.js';

export const getProviderStats: Handler = async (ctx) => ({
  body: await ctx.deps.services.stats.providerStats(ctx.params.provider_name, ctx.query.gateway ?? null, ctx.query.time_range ?? '24h'),
});

export const getGatewayStats: Handler = async (ctx) => {
  const body = await ctx.deps.services.stats.gatewayStats(ctx.params.gateway, ctx.query.time_range ?? '24h');
  if (!body) throw notFound(`Gateway ${ctx.params.gateway} is not a configured gateway.`);
  return { body };
};

export const getGatewaysSummary: Handler = async (ctx) => ({
  body: await ctx.deps.services.stats.gatewaysSummary(ctx.query.time_range ?? '24h'),
});

export const getProviderTopModels: Handler = async (ctx) => ({
  body: await ctx.deps.services.stats.providerTopModels(ctx.params.provider_name, ctx.query.time_range ?? '24h',
    ctx.query.limit ?? 5, ctx.query.offset ?? 0),
});

export const getTrendingModels: Handler = async (ctx) => ({
  body: await ctx.deps.services.stats.trending(ctx.query.gateway ?? null, ctx.query.time_range ?? '24h',
    ctx.query.sort_by ?? 'requests', ctx.query.limit ?? 10, ctx.query.offset ?? 0),
});
