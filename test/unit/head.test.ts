import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { queueHeaders, startHead } from '../../src/head.js';
import etag from 'etag';
import { request } from 'undici';
import { sendJson } from '../../src/dispatch.js';

/**
 * src/head.ts: headers queued on a response go out with its head, however the head is written, and a header set
 * or given later wins over a queued one of the same name, exactly once on the wire.
 */
describe('response head: queued headers', () => {
  let server: http.Server;
  let url: string;
  let answer: (res: http.ServerResponse) => void = () => undefined;

  before(async () => {
    server = http.createServer((_req, res) => {
      startHead(res, ['X-Content-Type-Options', 'nosniff', 'X-Frame-Options', 'DENY'], 'X-Request-Id', 'req-1');
      queueHeaders(res, { 'X-RateLimit-Limit': '10', 'X-RateLimit-Remaining': '9' });
      answer(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(() => server.close());

  /** The answer's status, body and raw header lines as name → every value sent (lower-cased names). */
  async function get(fn: (res: http.ServerResponse) => void) {
    answer = fn;
    return new Promise<{ status: number; body: string; headers: Map<string, string[]>; message: string }>((resolve, reject) => {
      http.get(url, (res) => {
        const headers = new Map<string, string[]>();
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const k = res.rawHeaders[i].toLowerCase();
          headers.set(k, [...(headers.get(k) ?? []), res.rawHeaders[i + 1]]);
        }
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => { body += c; }).on('end', () => resolve({ status: res.statusCode!, body, headers, message: res.statusMessage! }));
      }).on('error', reject);
    });
  }
  const queued = { 'x-content-type-options': ['nosniff'], 'x-frame-options': ['DENY'], 'x-request-id': ['req-1'], 'x-ratelimit-limit': ['10'], 'x-ratelimit-remaining': ['9'] };
  const expectHeaders = (got: Map<string, string[]>, want: Record<string, string[]>) => {
    for (const [k, v] of Object.entries(want)) expect(got.get(k), k).to.deep.equal(v);
  };

  it('writeHead with a list: the queued headers and the list in one head; a name the list gives replaces the queued one (any case)', async () => {
    const r = await get((res) => {
      res.writeHead(201, ['Content-Type', 'text/plain', 'x-ratelimit-REMAINING', '0', 'Content-Length', 2]);
      res.end('ok');
    });
    expect(r.status).to.equal(201);
    expect(r.body).to.equal('ok');
    expectHeaders(r.headers, { ...queued, 'x-ratelimit-remaining': ['0'], 'content-type': ['text/plain'], 'content-length': ['2'] });
  });

  it('writeHead with a reason phrase and a list', async () => {
    const r = await get((res) => {
      res.writeHead(202, 'Taken', ['X-Extra', 'y']);
      res.end();
    });
    expect([r.status, r.message]).to.deep.equal([202, 'Taken']);
    expectHeaders(r.headers, { ...queued, 'x-extra': ['y'] });
  });

  it('a head written implicitly (end without writeHead) carries the queued headers', async () => {
    const r = await get((res) => {
      res.statusCode = 418;
      res.end('tea');
    });
    expect(r.status).to.equal(418);
    expectHeaders(r.headers, queued);
  });

  it('with setHeader: a header set after queueing wins, the others are sent, and writeHead\'s own win over both', async () => {
    const r = await get((res) => {
      res.setHeader('X-Frame-Options', 'SAMEORIGIN');
      res.setHeader('Vary', 'Origin');
      res.writeHead(200, { 'X-Request-Id': 'override', 'Content-Type': 'text/plain' });
      res.end('x');
    });
    expectHeaders(r.headers, { ...queued, 'x-frame-options': ['SAMEORIGIN'], vary: ['Origin'], 'x-request-id': ['override'], 'content-type': ['text/plain'] });
  });

  it('with setHeader and a list given to writeHead (the case of sendJson after CORS headers)', async () => {
    const r = await get((res) => {
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.writeHead(200, ['Content-Type', 'application/json', 'X-Frame-Options', 'DENY-ALL']);
      res.end('{}');
    });
    expectHeaders(r.headers, { ...queued, 'access-control-allow-origin': ['*'], 'content-type': ['application/json'], 'x-frame-options': ['DENY-ALL'] });
  });

  it('sendJson: its headers, Content-Type and Content-Length with the queued ones; a Content-Type of its own is the only one', async () => {
    const plain = await get((res) => sendJson(res, 200, { ok: true }, { 'X-Gateway-Provider': 'openai' }));
    expectHeaders(plain.headers, { ...queued, 'x-gateway-provider': ['openai'], 'content-type': ['application/json; charset=utf-8'], 'content-length': ['11'] });
    expect(JSON.parse(plain.body)).to.deep.equal({ ok: true });
    const own = await get((res) => sendJson(res, 201, [1], { 'content-type': 'application/vnd.x+json' }));
    expect(own.status).to.equal(201);
    expectHeaders(own.headers, { ...queued, 'content-type': ['application/vnd.x+json'], 'content-length': ['3'] });
  });

  it('sendJson: a large body in many scripts (encoded in one pass) has its Content-Length in bytes and its ETag', async () => {
    const big = { items: Array.from({ length: 600 }, (_, i) => `${i}: café ☕ 记录 русский 😀 "q" \\`) };
    const text = JSON.stringify(big);
    expect(text.length).to.be.greaterThan(16 * 1024);
    const r = await get((res) => sendJson(res, 200, big));
    expect(r.headers.get('content-length')).to.deep.equal([String(Buffer.byteLength(text))]);
    expect(JSON.parse(r.body)).to.deep.equal(big);
    // a GET's tag is the one of its text, as before (etag of the string), and a matching If-None-Match is a 304
    const tagged = http.createServer((req, res) => sendJson(res, 200, big, undefined, req));
    await new Promise<void>((done) => tagged.listen(0, '127.0.0.1', done));
    try {
      const at = `http://127.0.0.1:${(tagged.address() as AddressInfo).port}/`;
      const first = await request(at);
      expect(first.headers.etag).to.equal(etag(text, { weak: true }));
      expect(await first.body.json()).to.deep.equal(big);
      const again = await request(at, { headers: { 'If-None-Match': String(first.headers.etag) } });
      expect(again.statusCode).to.equal(304);
      await again.body.dump();
    } finally {
      tagged.close();
    }
  });

  it('after the head is written, queueing sets the header as setHeader would (and throws as it would)', async () => {
    let error: unknown;
    await get((res) => {
      res.writeHead(200, []);
      try {
        queueHeaders(res, { 'X-Late': '1' });
      } catch (err) {
        error = err;
      }
      res.end();
    });
    expect((error as NodeJS.ErrnoException)?.code).to.equal('ERR_HTTP_HEADERS_SENT');
  });
});
