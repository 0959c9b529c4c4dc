/** Walks the spec for contract tests: every operation with a concrete URL that routes to it. */
import { loadSpec } from '../../src/spec.js';

export interface SpecOp {
  operationId: string;
  method: string;
  path: string;
  /** The path with every {param} filled with a plausible value. */
  url: string;
  security: 'public' | 'required' | 'optional';
  op: any;
}

const FILL: Record<string, string> = {
  session_id: '1', provider_name: 'openai', model_name: 'gpt-4o-mini', developer_name: 'openai', category: 'free',
  gateway: 'openai', provider: 'openai', model: 'gpt-4o-mini', model_id: 'gpt-4o-mini', tool_name: 'web_search', author: 'meta-llama',
};

export function specOps(): SpecOp[] {
  const { doc } = loadSpec();
  const out: SpecOp[] = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'delete', 'patch']) {
      const op = item[method];
      if (!op) continue;
      const sec: Array<Record<string, unknown>> = op.security ?? [];
      const security = !sec.length ? 'public' : sec.some((r) => !Object.keys(r).length) ? 'optional' : 'required';
      const url = p.replace(/\{([^}]+)\}/g, (_m, name) => FILL[name] ?? 'x');
      out.push({ operationId: op.operationId, method, path: p, url, security, op });
    }
  }
  return out;
}
