/** The model catalog operations: thin reads of the catalog service (rules live in src/catalog/). */
import type { Handler } from '../src/app.js';

const nul = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

export const listModels: Handler = (ctx) => {
  const q = ctx.query;
  return {
    body: ctx.deps.services.catalog.listModels({
      provider: nul(q.provider), isPrivate: nul(q.is_private), gateway: q.gateway, unique: q.unique_models ?? false,
      hub: q.include_hub ?? false, offset: q.offset ?? 0, limit: q.limit ?? 100,
    }),
  };
};

export const searchModels: Handler = (ctx) => {
  const q = ctx.query;
  return {
    body: ctx.deps.services.catalog.searchModels({
      q: nul(q.q), modality: nul(q.modality), isPrivate: nul(q.is_private),
      minContext: nul(q.min_context), maxContext: nul(q.max_context), minPrice: nul(q.min_price), maxPrice: nul(q.max_price),
      gateway: q.gateway, sortBy: q.sort_by ?? 'price', order: q.order ?? 'asc', offset: q.offset ?? 0, limit: q.limit ?? 20,
    }),
  };
};

export const listModelsByCategory: Handler = (ctx) => ({
  body: ctx.deps.services.catalog.listByCategory(ctx.params.category, ctx.query.include_inactive ?? false, ctx.query.limit ?? 200),
});

export const listLowLatencyModels: Handler = (ctx) => {
  const q = ctx.query;
  return {
    body: ctx.deps.services.catalog.listLowLatency(q.include_ultra_only ?? false, q.include_alternatives ?? true, q.offset ?? 0, q.limit ?? 50),
  };
};

export const listUniqueModels: Handler = (ctx) => {
  const q = ctx.query;
  return {
    body: ctx.deps.services.catalog.listUnique({
      offset: q.offset ?? 0, limit: q.limit ?? 100, minProviders: q.min_providers ?? 1,
      sortBy: q.sort_by ?? 'provider_count', order: q.order ?? 'desc', includeInactive: q.include_inactive ?? false,
    }),
  };
};

export const batchCompareModels: Handler = (ctx) => {
  const ids = ctx.query.model_ids;
  return { body: ctx.deps.services.catalog.batchCompare(Array.isArray(ids) ? ids : [ids], ctx.query.criteria ?? 'price') };
};

export const compareModelAcrossGateways: Handler = (ctx) => ({
  body: ctx.deps.services.catalog.compareAcrossGateways(`${ctx.params.provider_name}/${ctx.params.model_name}`, ctx.query.gateways),
});

export const getModel: Handler = (ctx) => ({
  body: ctx.deps.services.catalog.getModel(`${ctx.params.provider_name}/${ctx.params.model_name}`, ctx.query.gateway, ctx.query.include_hub ?? true),
});

export const listDeveloperModels: Handler = (ctx) => {
  const q = ctx.query;
  return {
    body: ctx.deps.services.catalog.listDeveloperModels(ctx.params.developer_name, q.gateway, q.include_hub ?? true, q.offset ?? 0, q.limit ?? 100),
  };
};
