/**
 * A precompiled replacement for openapi-backend's operation matching, with the same rules: an exact path with
 * the method wins; otherwise path templates (each `{param}` one segment), the most specific (longest static part)
 * first; a path that matches with no operation for the method is a 405, no match at all a 404. openapi-backend
 * rebuilds its operation list and regexes on every request; this builds them once.
 */
import type { OpenAPIBackend, Operation } from 'openapi-backend';

interface Compiled {
  op: Operation;
  re: RegExp;
  specificity: number;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function installFastRouter(api: OpenAPIBackend): void {
  const router = (api as unknown as { router: { matchOperation: (req: { method: string; path: string }, strict?: boolean) => Operation | undefined; getOperations: () => Operation[] } }).router;
  const ops = router.getOperations();
  // The definition is fixed after init: the flattened operation list (rebuilt with lodash on every call) is kept.
  router.getOperations = () => ops;
  const exact = new Map<string, Operation>();
  const templates: Compiled[] = [];
  for (const op of ops) {
    if (!op.path.includes('{')) exact.set(`${op.method} ${op.path}`, op);
    templates.push({
      op,
      re: new RegExp(`^${op.path.split(/\{[^}]+\}/).map(escape).join('[^/]+')}$`),
      specificity: op.path.replace(/\{.*?\}/g, '').length,
    });
  }
  templates.sort((a, b) => b.specificity - a.specificity);

  router.matchOperation = (req, strict) => {
    const method = req.method.toLowerCase();
    const path = (req.path.split('?')[0] || '/').replace(/^(?!\/)/, '/');
    const hit = exact.get(`${method} ${path}`);
    if (hit) return hit;
    let pathMatched = false;
    for (const t of templates) {
      if (!t.re.test(path)) continue;
      pathMatched = true;
      if (t.op.method === method) return t.op;
    }
    if (!strict) return undefined;
    throw new Error(pathMatched ? '405-methodNotAllowed: this method is not registered for the route' : '404-notFound: no route matches request');
  };
}
