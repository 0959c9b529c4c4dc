/** Model-hub facade (services.hub). Path ids arrive URL-decoded (`%2F` → `/`) and are validated by the spec. */
import type { Handler } from '../src/app.js';

/** A query value that means "no filter": absent, empty or the word null. */
const nullable = (v: unknown): string | null => (v === undefined || v === null || v === '' || v === 'null' ? null : String(v));

export const hubDiscovery: Handler = async (ctx) => {
  const q = ctx.query;
  const task = q.task === undefined ? 'text-generation' : nullable(q.task);
  return { body: await ctx.deps.services.hub.discovery({ task, sort: q.sort ?? 'likes', limit: q.limit ?? 50, offset: q.offset ?? 0 }) };
};

export const hubSearch: Handler = async (ctx) => {
  const q = ctx.query;
  return { body: await ctx.deps.services.hub.search({ q: String(q.q), task: nullable(q.task), limit: q.limit ?? 20, offset: q.offset ?? 0 }) };
};

export const getHubModelDetails: Handler = async (ctx) => ({ body: await ctx.deps.services.hub.details(String(ctx.params.model_id)) });

export const getHubModelCard: Handler = async (ctx) => ({ body: await ctx.deps.services.hub.card(String(ctx.params.model_id)) });

export const listHubAuthorModels: Handler = async (ctx) =>
  ({ body: await ctx.deps.services.hub.authorModels(String(ctx.params.author), ctx.query.limit ?? 50) });

export const listHubModelFiles: Handler = async (ctx) => ({ body: await ctx.deps.services.hub.files(String(ctx.params.model_id)) });
