import type { Handler } from '../src/app.js';
import { loadSpec } from '../src/spec.js';

/** The hand-written YAML as is (comments kept); written directly because a Reply is always JSON. */
export const getOpenApiYaml: Handler = (ctx) => {
  const text = loadSpec().yaml;
  ctx.res.statusCode = 200;
  ctx.res.setHeader('Content-Type', 'application/yaml; charset=utf-8');
  ctx.res.setHeader('Content-Length', Buffer.byteLength(text));
  ctx.res.end(text);
};
