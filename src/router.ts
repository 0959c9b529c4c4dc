/**
 * Operation matching, compiled once from the spec: an exact path with the method wins; otherwise path templates
 * (each `{param}` one segment, its value percent-decoded), the most specific (longest static part) first; a path
 * that matches with no operation for the method is a 405 (a HEAD is matched as the GET), no match at all a 404. The
 * dispatcher (src/dispatch.ts) uses it directly, and it replaces openapi-backend's own matching, which rebuilds its
 * operation list and regexes on every call.
 */
import type { OpenAPIBackend, Operation } from 'openapi-backend';

interface Compiled {
  op: Operation;
  /** The operation's method in upper case, as Node gives a request's. */
  method: string;
  re: RegExp;
  names: string[];
  specificity: number;
}

export interface RouteMatch {
  op: Operation;
  /** Path parameters, percent-decoded. */
  params: Record<string, string>;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export class Routes {
  /**
   * Paths without parameters, then methods (upper case): no key is built per request (a `${method} ${path}` string was
   * a new two-piece string, flattened and hashed at each lookup; a method in lower case was a new string, hashed too).
   */
  private readonly exact = new Map<string, Map<string, Operation>>();
  private readonly templates: Compiled[] = [];

  constructor(readonly operations: Operation[]) {
    for (const op of operations) {
      if (!op.path.includes('{')) {
        let methods = this.exact.get(op.path);
        if (!methods) this.exact.set(op.path, (methods = new Map()));
        methods.set(op.method.toUpperCase(), op);
      }
      const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      this.templates.push({
        op,
        method: op.method.toUpperCase(),
        names,
        re: new RegExp(`^${op.path.split(/\{[^}]+\}/).map(escape).join('([^/]+)')}$`),
        specificity: op.path.replace(/\{.*?\}/g, '').length,
      });
    }
    this.templates.sort((a, b) => b.specificity - a.specificity);
  }

  /**
   * `method` in upper case, as Node's parser gives it (`req.method`: one of its constant strings, whose hash V8 keeps);
   * `path` without the query string.
   */
  match(method: string, path: string): RouteMatch | 404 | 405 {
    const hit = this.exact.get(path)?.get(method);
    if (hit) return { op: hit, params: NO_PARAMS };
    let pathMatched = false;
    for (const t of this.templates) {
      const m = t.re.exec(path);
      if (!m) continue;
      pathMatched = true;
      if (t.method !== method) continue;
      const params: Record<string, string> = {};
      try {
        t.names.forEach((name, i) => { params[name] = decodeURIComponent(m[i + 1]); });
      } catch {
        return 404; // not valid percent-encoding: names nothing (the app answers such paths 400 before routing)
      }
      return { op: t.op, params };
    }
    // HEAD is GET without the body (RFC 9110 §9.3.2): a resource served to GET answers HEAD with the same head, and
    // Node's response sends no body to a HEAD request.
    if (pathMatched && method === 'HEAD') return this.match('GET', path);
    return pathMatched ? 405 : 404;
  }

  /** The methods (upper case) some operation serves on `path`; HEAD wherever GET is. */
  allowed(path: string): string[] {
    const bare = path.length > 1 ? path.replace(/\/$/, '') : path;
    const methods = this.templates.filter((t) => t.re.test(path) || t.re.test(bare)).map((t) => t.method);
    return methods.includes('GET') && !methods.includes('HEAD') ? [...methods, 'HEAD'] : methods;
  }
}

/** openapi-backend's matching, served from `routes` (its response validation and `matchOperation` use it). */
export function installFastRouter(api: OpenAPIBackend): Routes {
  const router = (api as unknown as { router: { matchOperation: (req: { method: string; path: string }, strict?: boolean) => Operation | undefined; getOperations: () => Operation[] } }).router;
  const ops = router.getOperations();
  // The definition is fixed after init: the flattened operation list (rebuilt with lodash on every call) is kept.
  router.getOperations = () => ops;
  const routes = new Routes(ops);
  router.matchOperation = (req, strict) => {
    const path = (req.path.split('?')[0] || '/').replace(/^(?!\/)/, '/');
    const m = routes.match(req.method.toUpperCase(), path);
    if (typeof m === 'object') return m.op;
    if (!strict) return undefined;
    throw new Error(m === 405 ? '405-methodNotAllowed: this method is not registered for the route' : '404-notFound: no route matches request');
  };
  return routes;
}
