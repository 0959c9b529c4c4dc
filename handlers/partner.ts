/** Partner token-catalog facade (services.partner). */
import type { Handler, HandlerCtx } from '../src/app.js';

/** `is_graduated`: true, false, or absent/null = all. */
function graduated(ctx: HandlerCtx): boolean | null {
  const v = ctx.query.is_graduated;
  return v === true || v === false ? v : null;
}

export const listPartnerModels: Handler = async (ctx) => {
  const filter = graduated(ctx);
  const models = await ctx.deps.services.partner.models(filter);
  return { body: { models, count: models.length, is_graduated: filter } };
};

export const listPartnerIds: Handler = async (ctx) => {
  const ids = (await ctx.deps.services.partner.models(graduated(ctx))).map((m) => m.model_id);
  return { body: { ids, count: ids.length } };
};

export const checkPartnerModel: Handler = async (ctx) => {
  const id = String(ctx.params.model_id);
  const details = await ctx.deps.services.partner.check(id, graduated(ctx));
  return { body: { model_id: id, exists: details !== null, details } };
};
