/** Routers, gateways and providers: thin reads of the catalog service. */
import type { Handler } from '../src/app.js';

export const listRouters: Handler = (ctx) => ({ body: ctx.deps.services.catalog.listRouters() });

export const listGateways: Handler = (ctx) => ({ body: ctx.deps.services.catalog.listGateways() });

export const getGatewaysStatus: Handler = (ctx) => ({ body: ctx.deps.services.catalog.gatewaysStatus() });

export const listProviders: Handler = (ctx) => {
  const q = ctx.query;
  return {
    body: ctx.deps.services.catalog.listProviders(q.moderated_only ?? false, q.gateway, q.offset ?? 0, q.limit ?? 100),
  };
};
