/**
 * The practical ceiling: a bare pass-through proxy with the same runtime (node:http + undici, pooled keep-alive),
 * no auth, no validation, no billing, no records. `node --import tsx bench/bare-proxy.ts UPSTREAM PORT`; the benchmark's
 * tools start it with `npm start`'s node flags, as the gateway (bench/lib.ts, `startBareProxy`).
 */
import http from 'node:http';
import { Pool } from 'undici';

const upstream = process.argv[2];
const port = Number(process.argv[3] ?? 0);
const pool = new Pool(upstream, { connections: 256 });

const server = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    const up = await pool.request({
      path: req.url!, method: req.method as 'POST',
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json', authorization: 'Bearer sim-key' },
      body: Buffer.concat(chunks),
    });
    res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type'] ?? 'application/json') });
    for await (const c of up.body) res.write(c);
    res.end();
  } catch (err) {
    res.writeHead(502).end(String(err));
  }
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
