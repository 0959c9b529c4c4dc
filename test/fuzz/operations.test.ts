/**
 * Property-based fuzzing of every operation in spec/openapi.yaml (fast-check). Requests come from the
 * operation's own schemas: valid values, boundary values, hostile values of the wrong type, huge strings, deep
 * nesting, and raw bodies no schema describes (invalid UTF-8, duplicate keys, truncated or oversized bodies,
 * wrong content types). Each operation gets a fixed set of targeted cases plus FUZZ_RUNS random ones (seeded:
 * FUZZ_SEED); the counts are printed.
 *
 * Every answer must be a 4xx with the spec's error body, or a 2xx (the app validates those against the spec
 * in tests); a 5xx only where the spec means one: 501 for an operation not built yet, 502/503/504 with an
 * upstream or availability error for operations that call upstreams. Never a 500, never a crash (an unhandled
 * rejection fails the run), and the gateway still answers afterwards.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { startTestGateway, ADMIN_KEY, type TestGateway } from '../support/app.js';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { fixtureCatalog, gw, offer } from '../support/catalog.js';
import { SchemaTools, nasty, paths, setAt, type Schema } from '../support/schema-arb.js';
import { loadSpec } from '../../src/spec.js';
import { protectServer } from '../../src/security.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const SEED = Number(process.env.FUZZ_SEED ?? 20_030);
const BODY_LIMIT = 256 * 1024;

/** Operations that call upstreams (or facades): a 502/503/504 with an upstream/availability error is an answer. */
const CALLS_UPSTREAM = /^(createChatCompletion|createMessage|createImage|createTranscription\w*|executeTool|searchAugment|hub\w+|getHub\w+|listHub\w+|\w*Partner\w*)$/;

interface Param { name: string; in: string; required?: boolean; schema: Schema }
interface Op { id: string; method: string; path: string; params: Param[]; body?: { type: string; schema: Schema }; adminOnly: boolean }
interface Req { method: string; path: string; headers: Record<string, string>; body?: Buffer }

const { doc } = loadSpec();

function operations(): Op[] {
  const out: Op[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'delete', 'patch']) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: any) => (p.$ref ? new SchemaTools(doc).resolve(p) : p)) as Param[];
      const content = op.requestBody?.content ?? {};
      const type = Object.keys(content)[0];
      out.push({ id: op.operationId, method: method.toUpperCase(), path, params, body: type ? { type, schema: content[type].schema } : undefined, adminOnly: !!op['x-admin-only'] });
    }
  }
  return out;
}

/** Percent-encodes the UTF-8 bytes of `s` (lone surrogates become U+FFFD, which encodeURIComponent refuses). */
const pct = (s: string): string => [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');

const asQueryValue = (v: unknown): string[] =>
  Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))) : [typeof v === 'string' ? v : JSON.stringify(v) ?? ''];

const WEIRD_PATH = ['%ff', '%', '%E0%A4%A', '%2e%2e%2f%2e%2e%2fetc%2fpasswd', 'a%00b', '..', '%2F', 'x'.repeat(5000), '%F0%9F%98%80', '-1', '0', '1e400', '%20'];
const WRONG_TYPES = ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=zz', 'application/json; charset=utf-16',
  'application/json; charset=bogus', 'application/octet-stream', '', 'application/vnd.api+json'];

function multipart(fields: Record<string, unknown>, file: Uint8Array | null, boundary = 'fuzzboundary'): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    if (k === 'file') continue;
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${typeof v === 'string' ? v : JSON.stringify(v)}\r\n`));
  }
  if (file) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`), Buffer.from(file), Buffer.from('\r\n'));
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(parts);
}

function encodeBody(op: Op, value: unknown, file: Uint8Array | null = new Uint8Array([0xff, 0xfb, 0x90, 0x64])): { type: string; body: Buffer } {
  const type = op.body!.type;
  if (type === 'multipart/form-data') return { type: 'multipart/form-data; boundary=fuzzboundary', body: multipart((value ?? {}) as Record<string, unknown>, file) };
  if (type === 'application/x-www-form-urlencoded') {
    const q = new URLSearchParams();
    if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) for (const s of asQueryValue(v)) q.append(k, s);
    return { type, body: Buffer.from(q.toString()) };
  }
  return { type, body: Buffer.from(value === undefined ? '' : JSON.stringify(value)) };
}

/** Raw bodies no schema describes, built from a valid body's JSON text. */
function rawVariants(op: Op, validText: string): Array<{ name: string; type: string; body: Buffer }> {
  const type = op.body!.type.startsWith('multipart') ? 'multipart/form-data; boundary=fuzzboundary' : op.body!.type;
  const firstKey = /^\{"([^"]+)"/.exec(validText)?.[1] ?? 'model';
  const deep = (n: number, open: string, close: string) => open.repeat(n) + close.repeat(n);
  const inv = Buffer.concat([Buffer.from(validText.slice(0, Math.max(1, validText.length >> 1))), Buffer.from([0xff, 0xfe, 0xc0, 0xaf, 0xed, 0xa0, 0x80]), Buffer.from(validText.slice(Math.max(1, validText.length >> 1)))]);
  return [
    { name: 'oversized body', type, body: Buffer.from(JSON.stringify({ [firstKey]: 'x'.repeat(BODY_LIMIT + 10) })) },
    { name: 'deep array nesting (100k)', type, body: Buffer.from(deep(100_000, '[', ']')) },
    { name: 'deep object nesting (50k)', type, body: Buffer.from('{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000)) },
    { name: 'deep nesting in a field', type, body: Buffer.from(validText.replace(/^\{/, `{"${firstKey}":${deep(20_000, '[', ']')},`)) },
    { name: 'deep nesting in an unknown field', type, body: Buffer.from(validText.replace(/^\{/, `{"zz_extra":${deep(100_000, '[', ']')},`)) },
    { name: 'deep nesting (2k) around every value', type, body: Buffer.from(deepText(JSON.parse(validText || '{}'), 2000)) },
    { name: 'invalid UTF-8', type, body: inv },
    { name: 'duplicate keys (junk first)', type, body: Buffer.from(validText.replace(/^\{/, `{"${firstKey}":[1,{"x":null}],`)) },
    { name: 'duplicate keys (junk last)', type, body: Buffer.from(validText.replace(/\}$/, `,"${firstKey}":{"$gt":""}}`)) },
    { name: 'truncated', type, body: Buffer.from(validText.slice(0, Math.floor(validText.length * 0.6))) },
    { name: 'empty', type, body: Buffer.alloc(0) },
    { name: 'top-level scalar', type, body: Buffer.from('"just a string"') },
    { name: 'top-level null', type, body: Buffer.from('null') },
    { name: 'garbage bytes', type, body: Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 97 + 13) % 256)) },
    ...WRONG_TYPES.map((t) => ({ name: `content-type "${t}"`, type: t, body: Buffer.from(validText) })),
  ];
}

/** JSON text of `v` with every value below the top wrapped `n` arrays deep (built as text: too deep to stringify). */
function deepText(v: unknown, n: number, top = true): string {
  const inner = !v || typeof v !== 'object' ? JSON.stringify(v) ?? 'null'
    : Array.isArray(v) ? `[${v.map((x) => deepText(x, n, false)).join(',')}]`
      : `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${deepText(x, n, false)}`).join(',')}}`;
  return top ? inner : '['.repeat(n) + inner + ']'.repeat(n);
}

describe('fuzz: every operation from its spec schema', function () {
  this.timeout(300_000);
  let sim: Simulator;
  let gateway: TestGateway;
  let server: http.Server;
  let port: number;
  let key: string;
  let sessionId: number;
  let keyId: number;
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);

  before(async () => {
    sim = await startSimulator();
    const catalog = fixtureCatalog({
      gateways: [{ ...gw('openai'), url: `${sim.url}/v1` }, { ...gw('anthropic', 'anthropic'), url: sim.url }],
      offers: [offer('openai', 'sim/echo', 'test/echo'), offer('anthropic', 'sim/echo', 'test/claude')],
    });
    gateway = await startTestGateway({
      services: { models: catalog },
      env: {
        BODY_LIMIT: String(BODY_LIMIT), UPLOAD_LIMIT: '65536', RATE_LIMIT_RPM: '0', RATE_LIMIT_TPM: '0', RATE_LIMIT_CONCURRENT: '0',
        UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '2000', UPSTREAM_TOTAL_TIMEOUT_MS: '5000',
        // tools that would reach the internet are pointed at a closed local port
        TAVILY_BASE_URL: 'http://127.0.0.1:9', TTS_BASE_URL: 'http://127.0.0.1:9',
      },
    });
    server = gateway.app.listen(0, '127.0.0.1');
    protectServer(server); // as src/main.ts does
    await new Promise((r) => server.once('listening', r));
    port = (server.address() as AddressInfo).port;
    ({ key, keyId } = await gateway.newKey(1000));
    const session = await send({ method: 'POST', path: '/v1/chat/sessions', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: Buffer.from('{"title":"fuzz"}') });
    sessionId = JSON.parse(session.text).data.id;
    process.on('unhandledRejection', onUnhandled);
  });
  after(async () => {
    process.off('unhandledRejection', onUnhandled);
    server?.close();
    await gateway?.close();
    await sim?.close();
  });

  function send(r: Req): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: r.method, path: r.path, headers: { ...r.headers, ...(r.body ? { 'content-length': String(r.body.length) } : {}) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.setTimeout(30_000, () => req.destroy(new Error('no answer in 30 s')));
      req.end(r.body);
    });
  }

  /** A transport failure names the case that caused it. */
  async function sendCase(operationId: string, what: string, r: Req) {
    try {
      return await send(r);
    } catch (err) {
      throw new Error(`${operationId} / ${what} (${r.method} ${r.path}, ${r.headers['content-type'] ?? 'no content-type'}): ${(err as Error).message}`);
    }
  }

  const ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
  ajv.addSchema({ $id: 'spec', components: doc.components });
  const validators = {
    error: ajv.compile({ $ref: 'spec#/components/schemas/Error' }),
    validation: ajv.compile({ $ref: 'spec#/components/schemas/HTTPValidationError' }),
    anthropic: ajv.compile({ $ref: 'spec#/components/schemas/AnthropicError' }),
  };

  /** Why an answer breaks the rules, or null when it is fine. */
  function verdict(op: Op, res: { status: number; headers: http.IncomingHttpHeaders; text: string }): string | null {
    if (!res.headers['x-request-id']) return 'no X-Request-Id';
    if (res.status >= 200 && res.status < 300) return null;
    let body: any;
    try {
      body = JSON.parse(res.text);
    } catch {
      return `a ${res.status} whose body is not JSON`;
    }
    const v = res.status === 422 ? validators.validation : op.path === '/v1/messages' ? validators.anthropic : validators.error;
    const ok = v(body);
    if (!ok) return `a ${res.status} body that is not the spec's error body: ${JSON.stringify(v.errors?.slice(0, 2))}`;
    if (res.status < 500) return null;
    const type = (body as any).error?.type;
    // The simulator is healthy: a failure to reach it, or a failure the engine could not classify, is the
    // gateway's own bug (e.g. it could not serialise what it accepted), not an upstream's.
    const code = (body as any).error?.code;
    const ownFault = code === 'upstream_connection' || code === 'upstream_error' || (body as any).error?.message === 'Upstream failure.';
    if ([502, 503, 504].includes(res.status) && CALLS_UPSTREAM.test(op.id) && !ownFault
      && ['upstream_error', 'service_unavailable', 'overloaded_error', 'api_error'].includes(type)) return null;
    return `a ${res.status} (${type}/${(body as any).error?.code})`;
  }

  const ops = operations();
  const tally = new Map<string, Record<string, number>>();
  const failures: string[] = [];

  function note(op: Op, what: string, req: Req, res: { status: number; headers: http.IncomingHttpHeaders; text: string }) {
    const t = tally.get(op.id) ?? {};
    const cls = res.status < 300 ? '2xx' : res.status < 500 ? '4xx' : '5xx';
    t[cls] = (t[cls] ?? 0) + 1;
    t.cases = (t.cases ?? 0) + 1;
    tally.set(op.id, t);
    const why = verdict(op, res);
    if (res.status >= 500 && process.env.FUZZ_DEBUG) console.log(op.id, what, res.status, res.text.slice(0, 160));
    if (why && failures.length < 50) {
      failures.push(`${op.id} [${what}] ${req.method} ${req.path.slice(0, 200)} (${req.headers['content-type'] ?? '-'}; ${req.body?.length ?? 0} bytes: ${req.body?.subarray(0, 120).toString('latin1')}) -> ${why}: ${res.text.slice(0, 300)}`);
    }
  }

  it(`answers ${RUNS} random and the targeted cases per operation with a 4xx error body or a valid 2xx, never a 500`, async () => {
    expect(ops.length).to.be.greaterThan(40);
    const tools = new SchemaTools(doc, {
      model: ['test/echo', 'test/claude'], session_id: [sessionId], key_id: [keyId], tool_name: ['web_search', 'calculator'],
      provider_name: ['openai'], provider: ['openai'], gateway: ['openai'], max_tokens: [16], max_completion_tokens: [16],
    });
    const auth = (o: Op) => ({ authorization: `Bearer ${o.adminOnly ? ADMIN_KEY : key}` });

    for (const op of ops) {
      const pathParams = op.params.filter((p) => p.in === 'path');
      const queryParams = op.params.filter((p) => p.in === 'query');
      const fill = (p: Param) => String(tools.sample(p.schema, () => 'x', [p.name]));
      const urlOf = (pv: Record<string, string>, query: Array<[string, string]>) =>
        op.path.replace(/\{([^}]+)\}/g, (_m, n) => pv[n] ?? pct(fill(pathParams.find((p) => p.name === n)!)))
        + (query.length ? '?' + query.map(([k, v]) => `${pct(k)}=${pct(v)}`).join('&') : '');
      const validBody = op.body ? tools.sample(op.body.schema, (p) => (p.at(-1) === 'content' || p.at(-1) === 'text' ? 'hello' : 'x')) : undefined;
      const validReq = (): Req => {
        const enc = op.body ? encodeBody(op, validBody) : undefined;
        return { method: op.method, path: urlOf({}, []), headers: { ...auth(op), ...(enc ? { 'content-type': enc.type } : {}) }, body: enc?.body };
      };

      // targeted cases
      const targeted: Array<[string, Req]> = [['valid sample', validReq()]];
      for (const p of pathParams) for (const w of WEIRD_PATH) targeted.push([`path ${p.name}=${w.slice(0, 20)}`, { ...validReq(), path: urlOf({ [p.name]: w }, []) }]);
      for (const p of queryParams) {
        for (const b of tools.boundaries(p.schema)) targeted.push([`query ${p.name} boundary`, { ...validReq(), path: urlOf({}, [[p.name, String(b)]]) }]);
        targeted.push([`query ${p.name}[x]`, { ...validReq(), path: urlOf({}, []) + `${op.path.includes('?') ? '&' : '?'}${p.name}[x]=1&${p.name}[__proto__][y]=2` }]);
      }
      targeted.push(['huge query string', { ...validReq(), path: urlOf({}, [['q', 'x'.repeat(60_000)]]) }]);
      targeted.push(['unknown query parameter', { ...validReq(), path: urlOf({}, [['nonsense', '1']]) }]);
      if (op.body) {
        const text = encodeBody(op, validBody).body.toString('utf8');
        for (const v of rawVariants(op, op.body.type === 'application/json' ? text : JSON.stringify(validBody))) {
          targeted.push([v.name, { method: op.method, path: urlOf({}, []), headers: { ...auth(op), ...(v.type ? { 'content-type': v.type } : {}) }, body: v.body }]);
        }
        if (op.body.type === 'multipart/form-data') {
          targeted.push(['oversized file part', { method: op.method, path: urlOf({}, []), headers: { ...auth(op), 'content-type': 'multipart/form-data; boundary=fuzzboundary' }, body: multipart(validBody as any, new Uint8Array(70_000)) }]);
          targeted.push(['many parts', { method: op.method, path: urlOf({}, []), headers: { ...auth(op), 'content-type': 'multipart/form-data; boundary=fuzzboundary' }, body: multipart(Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`f${i}`, 'x'])), null) }]);
        }
      }
      for (const [what, req] of targeted) note(op, what, req, await sendCase(op.id, what, req));

      // random cases
      const queryArb = fc.array(fc.oneof(
        ...queryParams.map((p) => fc.tuple(fc.constant(p.name), fc.oneof(tools.valid(p.schema, 0, p.name), fc.constantFrom(...tools.boundaries(p.schema), 'x'), nasty))),
        fc.tuple(fc.string({ maxLength: 10 }), nasty),
      ), { maxLength: Math.max(1, queryParams.length + 1) });
      const pathArb = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, fc.oneof(
        { arbitrary: tools.valid(p.schema, 0, p.name).map((v) => pct(String(v))), weight: 3 },
        fc.constantFrom(...WEIRD_PATH), nasty.map((v) => pct(String(JSON.stringify(v) ?? ''))),
      )])));
      const bodyArb: fc.Arbitrary<{ what: string; value: unknown } | undefined> = op.body
        ? fc.oneof(
          { arbitrary: tools.valid(op.body.schema).map((value) => ({ what: 'valid body', value })), weight: 2 },
          { arbitrary: fc.tuple(tools.valid(op.body.schema), fc.nat(), nasty, fc.constantFrom('replace', 'delete', 'add')).map(([v, i, bad, how]) => {
            const all = paths(v);
            const at = all[i % all.length];
            if (how === 'add') return { what: 'body + unknown field', value: setAt(v, [...at, `zz${i % 7}`], bad) };
            return { what: `body ${how} at ${at.join('.') || '(root)'}`, value: setAt(v, at, bad, how === 'delete') };
          }), weight: 4 },
          nasty.map((value) => ({ what: 'nasty body', value })),
        )
        : fc.constant(undefined);
      const arb = fc.record({
        query: queryArb,
        path: pathArb,
        body: bodyArb,
        auth: fc.constantFrom('key', 'key', 'key', 'key', 'none', 'garbage', 'admin'),
        wrongType: fc.oneof({ arbitrary: fc.constant(undefined), weight: 9 }, fc.constantFrom(...WRONG_TYPES)),
      });
      for (const c of fc.sample(arb, { numRuns: RUNS, seed: SEED + op.id.length })) {
        const enc = op.body && c.body ? encodeBody(op, c.body.value) : undefined;
        const authHeader = c.auth === 'key' ? auth(op) : c.auth === 'admin' ? { authorization: `Bearer ${ADMIN_KEY}` } : c.auth === 'garbage' ? { authorization: 'Bearer gw_live_\u00ff\u00fe\t x' } : {};
        const req: Req = {
          method: op.method,
          path: urlOf(c.path as Record<string, string>, c.query.flatMap(([k, v]) => asQueryValue(v).map((s) => [k, s] as [string, string]))),
          headers: { ...authHeader, ...(enc ? { 'content-type': c.wrongType ?? enc.type } : {}) },
          body: enc?.body,
        };
        note(op, c.body?.what ?? 'params', req, await sendCase(op.id, c.body?.what ?? 'params', req));
      }
    }

    const rows = [...tally.entries()].map(([id, t]) => `  ${id.padEnd(32)} ${String(t.cases).padStart(4)} cases  2xx ${String(t['2xx'] ?? 0).padStart(3)}  4xx ${String(t['4xx'] ?? 0).padStart(4)}  5xx ${String(t['5xx'] ?? 0).padStart(3)}`);
    const total = [...tally.values()].reduce((n, t) => n + t.cases, 0);
    console.log(`\n  fuzz (seed ${SEED}, ${RUNS} random cases per operation + targeted): ${total} requests over ${tally.size} operations\n${rows.join('\n')}\n`);
    expect(failures, failures.join('\n')).to.deep.equal([]);
    expect(unhandled.map(String)).to.deep.equal([]);
    const health = await send({ method: 'GET', path: '/health', headers: {} });
    expect(health.status).to.equal(200);
  });
});
