/** Operator operations (`x-admin-only` in the spec: app.ts refuses any credential but the admin one). */
import type { Handler } from '../src/app.js';
import { notFound } from '../src/errors.js';

const missing = (id: number) => notFound(`API key ${id} not found.`);

export const getKeyLimits: Handler = async (ctx) => {
  const id = Number(ctx.params.key_id);
  const view = await ctx.deps.services.limits.describe(id);
  if (!view) throw missing(id);
  return { body: view };
};

export const setKeyLimits: Handler = async (ctx) => {
  const id = Number(ctx.params.key_id);
  const view = await ctx.deps.services.limits.update(id, ctx.body ?? {});
  if (!view) throw missing(id);
  return { body: view };
};
