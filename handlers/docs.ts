import type { Handler } from '../src/app.js';
import { loadSpec } from '../src/spec.js';

/** The hand-written YAML as is (comments kept); written directly because a Reply is always JSON. */
export const getOpenApiYaml: Handler = (ctx) => {
  ctx.res.status(200).type('application/yaml').send(loadSpec().yaml);
};
