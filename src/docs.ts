/**
 * `/docs`: the interactive API reference (Swagger UI), served offline from the swagger-ui-dist package and
 * reading the live `/openapi.json`. These are plain Express routes, not spec operations: they serve a page and
 * its static assets to browsers, not the JSON API the contract describes (`/openapi.json` and `/openapi.yaml`
 * are spec operations). Only the files the page needs are served, never the package directory as a whole.
 *
 * Content-Security-Policy the page needs (set here on every /docs response, so a stricter API-wide default
 * set by a middleware earlier in the chain is replaced for these routes only):
 *   default-src 'none'                     nothing that is not listed below
 *   script-src 'self'                      the bundle and our initializer are files; no inline script, no eval
 *   style-src 'self'                       its style attributes are set through the CSSOM, which CSP allows
 *   img-src 'self' data:                   its CSS draws icons as data: SVGs; favicons from /docs
 *   connect-src 'self'                     it fetches /openapi.json, and "Try it out" calls this origin
 *   form-action 'self'; frame-ancestors 'none'; base-uri 'none'
 * test/e2e/docs.test.ts loads the page in headless Chromium under exactly this header and fails on a CSP
 * violation, so a change that needs more shows up there.
 */
import path from 'node:path';
import { createRequire } from 'node:module';
import express, { type Request, type Response, type Router } from 'express';

export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** swagger-ui-dist's directory, found without loading its ~1.5 MB bundle into this process. */
const DIST = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The files the page loads (and the bundle's source map, which browsers fetch only with devtools open). */
const ASSETS = new Set([
  'swagger-ui.css', 'swagger-ui.css.map', 'swagger-ui-bundle.js', 'swagger-ui-bundle.js.map',
  'index.css', 'favicon-16x16.png', 'favicon-32x32.png',
]);

const PAGE = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Model Gateway API reference</title>
    <link rel="stylesheet" type="text/css" href="/docs/swagger-ui.css">
    <link rel="stylesheet" type="text/css" href="/docs/index.css">
    <link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="/docs/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/docs/swagger-ui-bundle.js" charset="UTF-8"></script>
    <script src="/docs/initializer.js" charset="UTF-8"></script>
  </body>
</html>
`;

// BaseLayout: the reference without the standalone top bar (whose URL box would load other documents).
// validatorUrl null: no badge that calls validator.swagger.io — the page makes no request off this origin.
const INITIALIZER = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    layout: 'BaseLayout',
    presets: [SwaggerUIBundle.presets.apis],
    deepLinking: true,
    docExpansion: 'list',
    filter: true,
    displayRequestDuration: true,
    validatorUrl: null,
  });
});
`;

function send(res: Response, type: string, body: string): void {
  res.setHeader('Content-Security-Policy', DOCS_CSP);
  res.setHeader('Cache-Control', 'no-cache');
  res.type(type).send(body);
}

export function docsRouter(): Router {
  const router = express.Router({ strict: true });
  router.get(['/docs', '/docs/'], (_req: Request, res: Response) => send(res, 'html', PAGE));
  router.get('/docs/initializer.js', (_req: Request, res: Response) => send(res, 'js', INITIALIZER));
  router.get('/docs/:file', (req: Request, res: Response, next) => {
    const file = String(req.params.file);
    if (!ASSETS.has(file)) return next(); // falls through to the API's 404
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    res.sendFile(path.join(DIST, file), { maxAge: '1h' });
  });
  return router;
}
