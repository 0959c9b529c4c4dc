/**
 * Plain Express routes outside the JSON contract: Prometheus metrics (`/metrics`, text exposition format) and
 * the human status page (`/status`, HTML). They are not in spec/openapi.yaml because neither is JSON nor part
 * of the 2.0.3 interface; the JSON status lives at `/v1/status/`.
 */
import { Router, type Request, type Response, type NextFunction } from 'express';
import type { Deps } from './app.js';

export function opsRoutes(deps: Deps): Router {
  const r = Router();
  const wrap = (fn: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => {
    fn(req, res).catch(next);
  };
  if (deps.config.metricsEnabled) {
    r.get('/metrics', wrap(async (_req, res) => {
      res.locals.operationId = 'metrics';
      const m = await deps.services.metrics.render();
      res.setHeader('Content-Type', m.contentType);
      res.setHeader('Cache-Control', 'no-store');
      res.status(200).send(m.body);
    }));
  }
  r.get('/status', wrap(async (_req, res) => {
    res.locals.operationId = 'statusPage';
    const html = await deps.services.status.page();
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    // the page has no scripts and loads nothing: a strict policy costs nothing
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'");
    res.status(200).send(html);
  }));
  return r;
}
