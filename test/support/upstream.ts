/**
 * Local fake upstreams for tests: a node:http server on 127.0.0.1, port 0, that records every request and
 * answers through a handler. Nothing in the suite talks to any other address.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface FakeUpstream {
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export type FakeHandler = (req: SeenRequest, res: http.ServerResponse) => void;

export async function startFakeUpstream(handler: FakeHandler): Promise<FakeUpstream> {
  const requests: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(seen);
      handler(seen, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

let quiet: Promise<Record<string, string>> | undefined;

/**
 * The default upstream of every test gateway for the hub and partner facades: an empty hub (no models; any
 * model is "Repository not found", as the real hub answers without a token) and an empty partner catalog.
 * So tests that only check routing or auth never reach for the internet.
 */
export function quietUpstreamEnv(): Promise<Record<string, string>> {
  quiet ??= (async () => {
    const up = await startFakeUpstream((req, res) => {
      const path = req.url.split('?')[0];
      if (req.method === 'GET' && (path === '/api/models' || path === '/models')) return json(res, 200, []);
      if (path.startsWith('/api/models/')) return json(res, 401, { error: 'Repository not found' }, { 'x-error-code': 'RepoNotFound' });
      json(res, 404, { error: 'Entry not found' }, { 'x-error-code': 'EntryNotFound' });
    });
    return { HUB_BASE_URL: up.url, PARTNER_BASE_URL: up.url };
  })();
  return quiet;
}
