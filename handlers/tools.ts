/** Built-in tools and web-search augmentation (services.tools, services.search). */
import type { Handler } from '../src/app.js';
import { unauthorized } from '../src/errors.js';
import { clientGone } from '../src/engine/respond.js';

export const listTools: Handler = (ctx) => {
  const tools = ctx.deps.services.tools.list();
  return { body: { tools, count: tools.length } };
};

export const getToolDefinitions: Handler = (ctx) => ({ body: ctx.deps.services.tools.definitions() });

export const getTool: Handler = (ctx) => ({ body: ctx.deps.services.tools.detail(String(ctx.params.tool_name)) });

export const executeTool: Handler = async (ctx) => {
  if (!ctx.principal) throw unauthorized();
  const body = ctx.body ?? {};
  return { body: await ctx.deps.services.tools.execute(ctx.principal, ctx.requestId, body.tool_name, body.parameters ?? {}, clientGone(ctx.res).signal) };
};

export const searchAugment: Handler = async (ctx) => {
  const search = ctx.deps.services.search;
  await search.checkRate(ctx.principal, ctx.clientIp() ?? 'unknown');
  return { body: await search.augment(ctx.body, clientGone(ctx.res).signal) };
};
