import { expect } from 'chai';
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import etag from 'etag';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { SECURITY_HEADERS } from '../../src/security.js';

/**
 * The two ways a JSON request enters (src/app.ts): the lean path (plain node:http, the gateway's own JSON reader)
 * for `application/json` bodies in UTF-8 without a content coding, and Express + body-parser for the rest
 * (gzip/deflate bodies, other charsets, forms). Both end in the same dispatcher, so the same body must get the same
 * answer whichever path it took. A chat request for a model no gateway serves is a deterministic 404
 * `model_not_found` that only the handler gives: it proves a body got past parsing and validation.
 */
describe('contract: the lean JSON path and the Express path', () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startTestGateway();
    ({ key } = await gw.newKey(5));
  });
  after(() => gw.close());

  const auth = () => ({ Authorization: `Bearer ${key}` });
  const CHAT = '/v1/chat/completions';
  const valid = { model: 'nope/nothing', messages: [{ role: 'user', content: 'hi' }] };
  const notFoundMessage = "The model 'nope/nothing' does not exist or is not served by any gateway.";

  /** A raw JSON text on the lean path. */
  const lean = (text: string, headers: Record<string, string> = {}) =>
    request(gw.app).post(CHAT).set(auth()).set('Content-Type', 'application/json').set(headers).send(text);
  /**
   * The same text gzip-compressed, which only Express can read. (superagent would JSON-serialise a Buffer sent
   * with a JSON content type; `serialize` sends the bytes as they are.)
   */
  const gzipped = (text: string, headers: Record<string, string> = {}) =>
    request(gw.app).post(CHAT).set(auth()).set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').set(headers)
      .serialize((b: any) => b).send(zlib.gzipSync(text));

  function expectSecurityHeaders(res: request.Response) {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(res.headers[name.toLowerCase()], name).to.equal(value);
    expect(res.headers).to.not.have.property('x-powered-by');
  }

  function expectModelNotFound(res: request.Response, requestId?: string) {
    expect(res.status, JSON.stringify(res.body)).to.equal(404);
    expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
    expect(res.body.error).to.deep.equal({
      message: notFoundMessage, type: 'not_found_error', code: 'model_not_found', param: 'model',
      request_id: requestId ?? res.headers['x-request-id'],
    });
  }

  describe('compressed bodies (Express + body-parser)', () => {
    it('a gzip-compressed valid chat request reaches the handler exactly like the plain one', async () => {
      const plain = await lean(JSON.stringify(valid), { 'X-Request-Id': 'plain-1' });
      expectModelNotFound(plain, 'plain-1');
      const gz = await gzipped(JSON.stringify(valid), { 'X-Request-Id': 'gzip-1' });
      expectModelNotFound(gz, 'gzip-1');
      expect(gz.headers['x-request-id']).to.equal('gzip-1');
    });

    it('deflate is read too', async () => {
      const res = await request(gw.app).post(CHAT).set(auth()).set('Content-Type', 'application/json').set('Content-Encoding', 'deflate')
        .serialize((b: any) => b).send(zlib.deflateSync(JSON.stringify(valid)));
      expectModelNotFound(res);
    });

    it('an invalid gzip body gets the same 422 details as the uncompressed one', async () => {
      const bad = JSON.stringify({ model: 'm', messages: [{ role: 'wizard', content: 'x' }], temperature: 3 });
      const plain = await lean(bad);
      const gz = await gzipped(bad);
      expect(plain.status).to.equal(422);
      expect(gz.status).to.equal(422);
      const locs = plain.body.detail.map((d: any) => d.loc);
      expect(locs).to.deep.include(['body', 'messages', 0, 'role']);
      expect(locs).to.deep.include(['body', 'temperature']);
      expect(gz.body).to.deep.equal(plain.body);
    });

    it('a content coding body-parser does not know → 415 unsupported_media_type', async () => {
      const res = await request(gw.app).post(CHAT).set(auth()).set('Content-Type', 'application/json').set('Content-Encoding', 'compress')
        .send(JSON.stringify(valid));
      expect(res.status).to.equal(415);
      expect(res.body.error).to.deep.equal({
        message: 'unsupported content encoding "compress"', type: 'invalid_request_error', code: 'unsupported_media_type', param: null,
        request_id: res.headers['x-request-id'],
      });
    });

    it('a body that is not gzip although it says so → 400 bad_request, not a 500', async () => {
      const res = await request(gw.app).post(CHAT).set(auth()).set('Content-Type', 'application/json').set('Content-Encoding', 'gzip')
        .send(JSON.stringify(valid));
      expect(res.status).to.equal(400);
      expect(res.body.error).to.include({ type: 'invalid_request_error', code: 'bad_request', request_id: res.headers['x-request-id'] });
    });
  });

  describe('charsets', () => {
    it('charset=latin1 → 415 unsupported_media_type naming the charset', async () => {
      const res = await lean(JSON.stringify(valid), { 'Content-Type': 'application/json; charset=latin1' });
      expect(res.status).to.equal(415);
      expect(res.body.error).to.deep.equal({
        message: 'unsupported charset "LATIN1"', type: 'invalid_request_error', code: 'unsupported_media_type', param: null,
        request_id: res.headers['x-request-id'],
      });
    });

    it('charset=UTF-8 (any case, quoted or not) is the lean path and reaches the handler', async () => {
      expectModelNotFound(await lean(JSON.stringify(valid), { 'Content-Type': 'application/json; charset=UTF-8' }));
      expectModelNotFound(await lean(JSON.stringify(valid), { 'Content-Type': 'application/json; charset="utf-8"' }));
    });

    it('a UTF-16 body with its charset declared is decoded (Express path)', async () => {
      const res = await request(gw.app).post(CHAT).set(auth()).set('Content-Type', 'application/json; charset=utf-16le')
        .serialize((b: any) => b).send(Buffer.from(JSON.stringify(valid), 'utf16le'));
      expectModelNotFound(res);
    });

    // body-parser (iconv-lite) drops a leading UTF-8 byte-order mark; the lean reader does the same.
    it('a UTF-8 byte-order mark is dropped on both paths', async () => {
      expectModelNotFound(await gzipped('\ufeff' + JSON.stringify(valid)));
      expectModelNotFound(await lean('\ufeff' + JSON.stringify(valid)));
    });
  });

  describe('strict JSON', () => {
    for (const text of ['"hello"', '123', ' true', 'null']) {
      it(`a top-level primitive ${text.trim()} → 422 json_invalid at ["body"], same as body-parser says it`, async () => {
        const res = await lean(text);
        expect(res.status).to.equal(422);
        expect(res.body.detail).to.have.length(1);
        expect(res.body.detail[0]).to.include({ type: 'json_invalid' });
        expect(res.body.detail[0].loc).to.deep.equal(['body']);
        expect(res.body.detail[0].msg).to.match(/^Malformed JSON: Unexpected token/);
        expect(res.body.detail[0].msg).to.contain(text.trim()[0]);
        // the Express path (body-parser's strict mode) words it identically
        const gz = await gzipped(text);
        expect(gz.status).to.equal(422);
        expect(gz.body).to.deep.equal(res.body);
      });
    }

    it('an empty body with Content-Type application/json (plain or gzip) → 422 listing the missing required fields (not a 500)', async () => {
      for (const res of [await lean(''), await gzipped('')]) {
        expect(res.status).to.equal(422);
        expect(res.body).to.deep.equal({ detail: [
          { loc: ['body', 'model'], msg: 'Field required', type: 'missing' },
          { loc: ['body', 'messages'], msg: 'Field required', type: 'missing' },
        ] });
      }
    });

    it('no body and no Content-Type → 422 body missing', async () => {
      const res = await request(gw.app).post(CHAT).set(auth());
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.equal({ detail: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
    });

    it('a top-level array is JSON (not json_invalid) and fails validation as the wrong type', async () => {
      const res = await lean('[]');
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.equal({ detail: [{ loc: ['body'], msg: 'must be object', type: 'type_error' }] });
    });

    it('JSON nested deeper than 128 levels → 422 json_invalid on both paths; 128 levels parse', async () => {
      const deep = '['.repeat(129) + ']'.repeat(129);
      const res = await lean(deep);
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.equal({ detail: [{ loc: ['body'], msg: 'JSON nested deeper than 128 levels.', type: 'json_invalid' }] });
      const gz = await gzipped(deep);
      expect(gz.status).to.equal(422);
      expect(gz.body).to.deep.equal(res.body);
      // 128 is allowed: parsed, then refused by the schema (the body must be an object), not as malformed
      const edge = await lean('['.repeat(128) + ']'.repeat(128));
      expect(edge.status).to.equal(422);
      expect(edge.body.detail[0]).to.include({ type: 'type_error' });
    });

    it('objects nest as arrays do; a 100,000-deep body is a 422 on both paths, not a crash', async () => {
      const deepObject = '{"a":'.repeat(129) + '1' + '}'.repeat(129);
      const tooDeep = { detail: [{ loc: ['body'], msg: 'JSON nested deeper than 128 levels.', type: 'json_invalid' }] };
      for (const body of [deepObject, '['.repeat(100_000) + ']'.repeat(100_000)]) {
        const res = await lean(body);
        expect(res.status).to.equal(422);
        expect(res.body).to.deep.equal(tooDeep);
        const gz = await gzipped(body);
        expect(gz.status).to.equal(422);
        expect(gz.body).to.deep.equal(tooDeep);
      }
      // nesting inside a message counts from the top (body 1, messages 2, the message 3): 125 arrays in it parse
      // (the innermost at depth 128), 126 do not
      const nested = (n: number) => JSON.stringify({ ...valid, messages: [{ role: 'user', content: 'hi', extra: JSON.parse('['.repeat(n) + ']'.repeat(n)) }] });
      expectModelNotFound(await lean(nested(125)));
      const over = await lean(nested(126));
      expect(over.status).to.equal(422);
      expect(over.body).to.deep.equal(tooDeep);
      // and the gateway still answers
      expectModelNotFound(await lean(JSON.stringify(valid)));
    });

    it('brackets inside strings do not count as nesting', async () => {
      const res = await lean(JSON.stringify({ ...valid, messages: [{ role: 'user', content: '[{'.repeat(500) + '\\"[' }] }));
      expectModelNotFound(res);
    });

    it('a +json media type is JSON too', async () => {
      expectModelNotFound(await lean(JSON.stringify(valid), { 'Content-Type': 'application/vnd.api+json' }));
    });
  });

  describe('body size limit (BODY_LIMIT=1kb)', () => {
    let small: TestGateway;
    let smallKey: string;
    let server: http.Server;
    let port: number;
    before(async () => {
      small = await startTestGateway({ env: { BODY_LIMIT: '1kb' } });
      ({ key: smallKey } = await small.newKey(5));
      server = http.createServer(small.app).listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      port = (server.address() as AddressInfo).port;
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await small.close();
    });

    /** A valid chat request of exactly `n` bytes (the user message padded with x). */
    function bodyOf(n: number): string {
      const empty = JSON.stringify({ model: 'nope/nothing', messages: [{ role: 'user', content: '' }] });
      const text = JSON.stringify({ model: 'nope/nothing', messages: [{ role: 'user', content: 'x'.repeat(n - empty.length) }] });
      expect(Buffer.byteLength(text)).to.equal(n);
      return text;
    }

    /**
     * A POST over a real socket. `chunked`: the body goes in pieces with Transfer-Encoding: chunked and no
     * Content-Length (supertest always declares one). `agent` lets two requests share one connection.
     */
    function post(body: string, opts: { chunked?: boolean; agent?: http.Agent; headers?: Record<string, string> } = {}) {
      return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any; localPort: number }>((resolve, reject) => {
        const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${smallKey}`, ...opts.headers };
        if (!opts.chunked) headers['content-length'] = String(Buffer.byteLength(body));
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: CHAT, headers, agent: opts.agent ?? false }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => resolve({
            status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(parts).toString('utf8')), localPort: req.socket!.localPort!,
          }));
        });
        req.on('error', reject);
        if (opts.chunked) {
          for (let i = 0; i < body.length; i += 300) req.write(body.slice(i, i + 300));
          req.end();
        } else req.end(body);
      });
    }

    const expect413 = (res: { status: number; headers: http.IncomingHttpHeaders; body: any }) => {
      expect(res.status, JSON.stringify(res.body)).to.equal(413);
      expect(res.body.error).to.deep.equal({
        message: 'Request body is larger than the limit of 1024 bytes.', type: 'invalid_request_error', code: 'payload_too_large', param: null,
        request_id: res.headers['x-request-id'],
      });
    };

    it('a Content-Length over the limit → 413 payload_too_large; exactly the limit is read', async () => {
      const at = await post(bodyOf(1024));
      expect(at.status, JSON.stringify(at.body)).to.equal(404);
      expect(at.body.error.code).to.equal('model_not_found');
      expect413(await post(bodyOf(1025)));
      expect413(await post(bodyOf(50_000)));
    });

    it('a chunked body (no Content-Length) over the limit → 413 as well; exactly the limit is read', async () => {
      const at = await post(bodyOf(1024), { chunked: true });
      expect(at.status, JSON.stringify(at.body)).to.equal(404);
      expect(at.body.error.code).to.equal('model_not_found');
      expect413(await post(bodyOf(1025), { chunked: true }));
      expect413(await post(bodyOf(50_000), { chunked: true }));
    });

    it('the rest of a refused body is read off: the next request on the same connection is answered', async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const refused = await post(bodyOf(20_000), { agent, chunked: true });
        expect413(refused);
        const next = await post(bodyOf(200), { agent });
        expect(next.status).to.equal(404);
        expect(next.body.error.code).to.equal('model_not_found');
        expect(next.localPort, 'same keep-alive connection').to.equal(refused.localPort);
      } finally {
        agent.destroy();
      }
    });

    it('a gzip body whose inflated size is over the limit → 413 (the limit is on the decoded body)', async () => {
      const text = bodyOf(5000);
      const packed = zlib.gzipSync(text);
      expect(packed.length).to.be.lessThan(1024);
      const res = await request(small.app).post(CHAT).set({ Authorization: `Bearer ${smallKey}` }).set('Content-Type', 'application/json')
        .set('Content-Encoding', 'gzip').serialize((b: any) => b).send(packed);
      expect413({ status: res.status, headers: res.headers, body: res.body });
    });
  });

  describe('conditional GETs', () => {
    it('a GET with a JSON answer carries a weak ETag of its body; If-None-Match with it → 304, empty body', async () => {
      const first = await request(gw.app).get('/v1/tools');
      expect(first.status).to.equal(200);
      expect(first.body.tools.map((t: any) => t.name)).to.deep.equal(['text_to_speech', 'web_search']);
      const tag = first.headers.etag;
      expect(tag).to.match(/^W\/"[0-9a-f]+-[A-Za-z0-9+/]+"$/);
      expect(tag).to.equal(etag(first.text, { weak: true }));
      expect(first.headers['content-length']).to.equal(String(Buffer.byteLength(first.text)));

      const again = await request(gw.app).get('/v1/tools').set('If-None-Match', tag).set('X-Request-Id', 'cond-1');
      expect(again.status).to.equal(304);
      expect(again.text).to.equal('');
      expect(again.body).to.deep.equal({});
      expect(again.headers.etag).to.equal(tag);
      expect(again.headers['x-request-id']).to.equal('cond-1');
      expectSecurityHeaders(again);

      // one of several tags, and the strong form (If-None-Match compares weakly)
      expect((await request(gw.app).get('/v1/tools').set('If-None-Match', `W/"nope", ${tag}`)).status).to.equal(304);
      expect((await request(gw.app).get('/v1/tools').set('If-None-Match', tag.slice(2))).status).to.equal(304);
    });

    it('a different ETag → 200 with the full body', async () => {
      const first = await request(gw.app).get('/v1/tools');
      const other = await request(gw.app).get('/v1/tools').set('If-None-Match', 'W/"7de-somethingelse"');
      expect(other.status).to.equal(200);
      expect(other.headers.etag).to.equal(first.headers.etag);
      expect(other.body).to.deep.equal(first.body);
    });

    it('different answers have different tags; an ETag of one path is not fresh for another', async () => {
      const tools = await request(gw.app).get('/v1/tools');
      const defs = await request(gw.app).get('/v1/tools/definitions');
      expect(defs.status).to.equal(200);
      expect(defs.headers.etag).to.equal(etag(defs.text, { weak: true }));
      expect(defs.headers.etag).to.not.equal(tools.headers.etag);
      const cross = await request(gw.app).get('/v1/tools/definitions').set('If-None-Match', tools.headers.etag);
      expect(cross.status).to.equal(200);
      expect(cross.body).to.deep.equal(defs.body);
    });

    it('errors and POST answers carry no ETag', async () => {
      const missing = await request(gw.app).get('/v1/tools/Web_Search');
      expect(missing.status).to.equal(404);
      expect(missing.headers).to.not.have.property('etag');
      const post = await lean(JSON.stringify(valid));
      expect(post.status).to.equal(404);
      expect(post.headers).to.not.have.property('etag');
    });
  });

  it('security headers and X-Request-Id on a lean-path answer and on an Express-path answer', async () => {
    for (const [send, id] of [[lean, 'lean-abc'], [gzipped, 'express-abc']] as const) {
      const res = await send(JSON.stringify(valid), { 'X-Request-Id': id });
      expectModelNotFound(res, id);
      expect(res.headers['x-request-id']).to.equal(id);
      expectSecurityHeaders(res);
    }

    const lean422 = await lean('"x"', { 'X-Request-Id': 'lean-422' });
    expect(lean422.status).to.equal(422);
    expect(lean422.headers['x-request-id']).to.equal('lean-422');
    expectSecurityHeaders(lean422);

    const ex415 = await lean('{}', { 'Content-Type': 'application/json; charset=latin1' });
    expect(ex415.status).to.equal(415);
    expect(ex415.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
    expect(ex415.body.error.request_id).to.equal(ex415.headers['x-request-id']);
    expectSecurityHeaders(ex415);
  });
});
