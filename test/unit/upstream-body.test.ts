/**
 * The upstream transport (src/providers/http.ts): `send()` on undici's dispatch, and the UpstreamBody its chunks
 * are queued in. Against real local HTTP servers: the bytes in order, backpressure on a slow reader, non-2xx
 * answers, a reader that stops early keeping the connection, a client that went away before the call started.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readCapped, send, UpstreamBody } from '../../src/providers/http.js';
import { bodyOf } from '../support/upstream-body.js';
import { UpstreamError } from '../../src/engine/types.js';
import { Cancellation } from '../../src/cancel.js';
import { openaiEvents } from '../../src/providers/openai/index.js';

const timeouts = { connectMs: 5000, firstByteMs: 5000, totalMs: 10_000 };
const tick = () => new Promise((r) => setImmediate(r));

async function serve(handler: http.RequestListener): Promise<{ url: string; server: http.Server; ports: number[] }> {
  const ports: number[] = [];
  const server = http.createServer((req, res) => {
    ports.push(req.socket.remotePort!);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, ports };
}

function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((r) => server.close(() => r()));
}

describe('unit: UpstreamBody', () => {
  function fed() {
    const flow = { pauses: 0, resumes: 0, aborted: undefined as Error | undefined, pause() { flow.pauses++; }, resume() { flow.resumes++; }, abort(e: Error) { flow.aborted ??= e; } };
    return { body: new UpstreamBody(flow), flow };
  }

  /** A chunk of exactly 1 KiB that says which it is. */
  const kib = (i: number) => Buffer.from(String(i).padEnd(1024, '.'));

  it('gives the chunks in order, then done; pauses the upstream at 64 KiB unread and resumes below 16 KiB', async () => {
    const { body, flow } = fed();
    for (let i = 0; i < 63; i++) body.push(kib(i));
    expect(flow.pauses, '63 KiB unread').to.equal(0);
    body.push(kib(63));
    expect(flow.pauses, '64 KiB unread').to.equal(1);
    for (let i = 64; i < 80; i++) body.push(kib(i));
    body.end();
    expect(flow.pauses, 'paused once').to.equal(1);
    const got: Buffer[] = [];
    for (let i = 0; i < 64; i++) got.push((await body.next()).value);
    expect(flow.resumes, 'still 16 KiB unread').to.equal(0);
    got.push((await body.next()).value);
    expect(flow.resumes, 'below 16 KiB unread').to.equal(1);
    for await (const c of body) got.push(c);
    expect(got.map(String)).to.deep.equal(Array.from({ length: 80 }, (_, i) => String(kib(i))));
    expect(await body.next()).to.deep.equal({ value: undefined, done: true });
  });

  it('small chunks: a 24-chunk answer that arrives before its reader does not pause the upstream; 256 chunks do, resumed below 64', async () => {
    const sse = (i: number) => Buffer.from(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"word ${i}"}}]}\n\n`);
    const a = fed();
    for (let i = 0; i < 24; i++) a.body.push(sse(i));
    expect(a.flow.pauses).to.equal(0);
    const b = fed();
    for (let i = 0; i < 255; i++) b.body.push(Buffer.from('x'));
    expect(b.flow.pauses, '255 chunks').to.equal(0);
    b.body.push(Buffer.from('x'));
    expect(b.flow.pauses, '256 chunks').to.equal(1);
    for (let i = 0; i < 192; i++) b.body.shift();
    await Promise.resolve();
    expect(b.flow.resumes, '64 chunks unread').to.equal(0);
    b.body.shift();
    await Promise.resolve();
    expect(b.flow.resumes, '63 chunks unread').to.equal(1);
  });

  it('a failure comes after the chunks that arrived before it, then the reader is done', async () => {
    const { body } = fed();
    const why = new Error('socket hang up');
    body.push(Buffer.from('a'));
    body.fail(why);
    body.fail(new Error('a second failure is not reported'));
    expect(String((await body.next()).value)).to.equal('a');
    const err = await body.next().then(() => null, (e) => e);
    expect(err).to.equal(why);
  });

  it('wakes a reader waiting for the next chunk; two waiting calls get the next two chunks in order', async () => {
    const { body } = fed();
    const pending = body.next();
    setTimeout(() => body.push(Buffer.from('late')), 5);
    expect(String((await pending).value)).to.equal('late');
    const a = body.next();
    const b = body.next();
    setTimeout(() => { body.push(Buffer.from('one')); body.push(Buffer.from('two')); }, 5);
    expect([String((await a).value), String((await b).value)]).to.deep.equal(['one', 'two']);
  });

  it('dump() drops what is queued and what follows, resolves at the end; past its limit it aborts the call', async () => {
    const { body, flow } = fed();
    body.push(Buffer.alloc(10));
    const dumped = body.dump({ limit: 100 });
    body.push(Buffer.alloc(50));
    body.end();
    await dumped;
    expect(flow.aborted).to.equal(undefined);
    expect(await body.next()).to.deep.equal({ value: undefined, done: true });

    const big = fed();
    const over = big.body.dump({ limit: 100 });
    big.body.push(Buffer.alloc(101));
    expect(big.flow.aborted).to.be.instanceOf(Error);
    big.body.fail(big.flow.aborted); // undici reports the abort to the handler
    await over;
  });

  it('shift() and onReady: chunks taken as they are, a wake-up for the next arrival, the end or a failure; a paused upstream resumed a microtask later', async () => {
    const { body, flow } = fed();
    expect(body.shift()).to.equal(undefined);
    const woke: string[] = [];
    body.onReady(() => woke.push('first'));
    body.onReady(() => woke.push('second'));
    body.push(Buffer.from('a'));
    expect(woke, 'both, in order, inside push').to.deep.equal(['first', 'second']);
    body.push(Buffer.from('b'));
    expect(woke, 'once each').to.have.length(2);
    expect(String(body.shift())).to.equal('a');
    expect(String(body.shift())).to.equal('b');
    for (let i = 0; i < 64; i++) body.push(kib(i));
    expect(flow.pauses).to.equal(1);
    for (let i = 0; i < 48; i++) body.shift();
    expect(flow.resumes).to.equal(0);
    body.shift(); // 15 KiB unread: below 16
    expect(flow.resumes, 'not from inside the caller (undici\'s data callback)').to.equal(0);
    await Promise.resolve();
    expect(flow.resumes).to.equal(1);
    let ended = false;
    body.onReady(() => (ended = true));
    body.end();
    expect(ended).to.equal(true);
    expect(body.over).to.equal(true);
    for (let i = 49; i < 64; i++) expect(String(body.shift())).to.equal(String(kib(i)));
    expect(body.shift()).to.equal(undefined);

    const failing = fed();
    let failed: unknown;
    failing.body.onReady(() => (failed = failing.body.error));
    const why = new Error('reset');
    failing.body.fail(why);
    expect(failed).to.equal(why);
  });

  it('shiftAll(): every chunk waiting, as one buffer in order; a paused upstream resumed a microtask later; nothing while reading off', async () => {
    const { body, flow } = fed();
    expect(body.shiftAll()).to.equal(undefined);
    const one = Buffer.from('only');
    body.push(one);
    expect(body.shiftAll(), 'one chunk: itself, not a copy').to.equal(one);
    body.push(Buffer.from('a'));
    body.push(Buffer.from('bc'));
    body.push(Buffer.from('d'));
    expect(String(body.shiftAll())).to.equal('abcd');
    expect(body.shiftAll(), 'taken').to.equal(undefined);
    for (let i = 0; i < 64; i++) body.push(kib(i));
    expect(flow.pauses).to.equal(1);
    const all = body.shiftAll()!;
    expect(all.length).to.equal(64 * 1024);
    expect(String(all.subarray(63 * 1024, 63 * 1024 + 2))).to.equal('63');
    expect(flow.resumes, 'not from inside the caller (undici\'s data callback)').to.equal(0);
    await Promise.resolve();
    expect(flow.resumes).to.equal(1);
    body.push(Buffer.from('x'));
    body.push(Buffer.from('y'));
    void body.dump();
    expect(body.shiftAll(), 'read off: nothing for the reader').to.equal(undefined);
  });

  it('takeAll(): a body that has all arrived is taken whole at once (readCapped reads it so); otherwise nothing is taken', async () => {
    const { body } = fed();
    body.push(Buffer.from('{"a":'));
    expect(body.takeAll(), 'not ended yet').to.equal(undefined);
    body.push(Buffer.from('1}'));
    body.end();
    expect(body.takeAll()!.map(String)).to.deep.equal(['{"a":', '1}']);
    expect(await body.next(), 'read').to.deep.equal({ value: undefined, done: true });
    expect(await readCapped(bodyOf('{"b":', '2}'))).to.equal('{"b":2}');
    const failing = fed();
    failing.body.push(Buffer.from('x'));
    failing.body.fail(new Error('reset'));
    expect(failing.body.takeAll(), 'failed: read as it comes, the failure after the chunk').to.equal(undefined);
    const capped = fed();
    capped.body.push(Buffer.alloc(10));
    capped.body.end();
    expect(await readCapped(capped.body, 5).then(() => null, (e) => e)).to.be.instanceOf(UpstreamError).with.property('kind', 'invalid_response');
  });

  it('destroy() aborts the call and fails the body', async () => {
    const { body, flow } = fed();
    const why = new Error('enough');
    body.destroy(why);
    expect(flow.aborted).to.equal(why);
    expect(body.over).to.equal(true);
    expect(await body.next().then(() => null, (e) => e)).to.equal(why);
  });
});

describe('unit: send() over undici dispatch', () => {
  it('streams a large body to a slow reader in order (backpressure), and the connection is reused', async () => {
    const piece = Buffer.alloc(64 * 1024, 'x');
    const { url, server, ports } = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-up': 'yes' });
        let i = 0;
        const more = () => {
          while (i < 64) {
            const b = Buffer.from(piece);
            b[0] = i++;
            if (!res.write(b)) return void res.once('drain', more);
          }
          res.end();
        };
        more();
      });
    });
    try {
      for (let round = 0; round < 2; round++) {
        const res = await send(`${url}/big?x=1`, { headers: { 'content-type': 'application/json' }, body: '{}', signal: new Cancellation().signal, timeouts });
        expect(res.status).to.equal(200);
        expect(res.headers['x-up']).to.equal('yes');
        let bytes = 0;
        const firsts: number[] = [];
        let carry = 0;
        for await (const chunk of res.body) {
          // chunk boundaries differ from the writes: mark each 64 KB piece's first byte by offset
          for (let off = (64 * 1024 - carry) % (64 * 1024); off < chunk.length; off += 64 * 1024) firsts.push(chunk[off]);
          carry = (carry + chunk.length) % (64 * 1024);
          bytes += chunk.length;
          if (bytes < 512 * 1024) await new Promise((r) => setTimeout(r, 1)); // a slow reader at first
        }
        expect(bytes).to.equal(64 * 64 * 1024);
        expect(firsts).to.deep.equal(Array.from({ length: 64 }, (_, i) => i));
        await tick(); // undici puts the connection back in its pool after the body's end
      }
      expect(ports).to.have.length(2);
      expect(ports[1], 'the second call reused the first one\'s connection').to.equal(ports[0]);
    } finally {
      await close(server);
    }
  });

  it('an SSE stream read by the stream reader: a slow reader pauses the upstream, every event arrives in order, the connection is reused', async () => {
    const N = 3000;
    const pad = 'y'.repeat(400);
    let paused = 0;
    const { url, server, ports } = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        let i = 0;
        const more = () => {
          while (i < N) {
            const ok = res.write(`data: ${JSON.stringify({ id: 'c', model: 'm', choices: [{ index: 0, delta: { content: `${i++} ${pad}` } }] })}\n\n`);
            if (!ok) {
              paused++;
              return void res.once('drain', more);
            }
          }
          res.end('data: [DONE]\n\n');
        };
        more();
      });
    });
    try {
      for (let round = 0; round < 2; round++) {
        const res = await send(`${url}/v1/chat/completions`, { headers: { 'content-type': 'application/json' }, body: '{}', signal: new Cancellation().signal, timeouts });
        const seen: number[] = [];
        let last = '';
        for await (const ev of openaiEvents(res.body)) {
          if (ev.type === 'text') seen.push(Number(ev.text.split(' ')[0]));
          last = ev.type;
          if (seen.length % 500 === 1) await new Promise((r) => setTimeout(r, 20)); // a slow reader now and then
        }
        expect(seen).to.deep.equal(Array.from({ length: N }, (_, i) => i));
        expect(last).to.equal('end');
        await tick();
      }
      expect(paused, 'the server met backpressure').to.be.above(0);
      expect(ports).to.have.length(2);
      expect(ports[1], 'the second stream reused the first one\'s connection').to.equal(ports[0]);
    } finally {
      await close(server);
    }
  });

  it('a non-2xx answer is an UpstreamError with the upstream\'s message, the credential it echoed redacted', async () => {
    const { url, server } = await serve((req, res) => {
      req.resume();
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '2' });
      res.end(JSON.stringify({ error: { message: `slow down, key ${req.headers.authorization!.slice(7)}` } }));
    });
    try {
      const err = await send(`${url}/x`, { headers: { authorization: 'Bearer sk-secret-123456' }, body: '{}', signal: new Cancellation().signal, timeouts })
        .then(() => null, (e) => e);
      expect(err).to.be.instanceOf(UpstreamError);
      expect(err.kind).to.equal('rate_limited');
      expect(err.status).to.equal(429);
      expect(err.retryAfterMs).to.equal(2000);
      expect(err.message).to.include('slow down').and.not.include('sk-secret-123456');
      // passStatus: the answer is the caller's to read
      const res = await send(`${url}/x`, { headers: { authorization: 'Bearer sk-secret-123456' }, body: '{}', signal: new Cancellation().signal, timeouts, passStatus: true });
      expect(res.status).to.equal(429);
      let text = '';
      for await (const c of res.body) text += c;
      expect(JSON.parse(text).error.message).to.match(/^slow down/);
    } finally {
      await close(server);
    }
  });

  it('a reader that stops early leaves the connection in the pool when little is left', async () => {
    const { url, server, ports } = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      setTimeout(() => res.end('data: tail\n\n'), 20);
    });
    try {
      for (let i = 0; i < 2; i++) {
        const res = await send(`${url}/s`, { headers: {}, body: '{}', signal: new Cancellation().signal, timeouts });
        for await (const c of res.body) { expect(String(c)).to.equal('data: 1\n\n'); break; }
        await new Promise((r) => setTimeout(r, 60)); // the tail is read off and the connection goes back to the pool
      }
      expect(ports).to.have.length(2);
      expect(ports[1]).to.equal(ports[0]);
    } finally {
      await close(server);
    }
  });

  it('a client already gone: the call is not made, the caller gets the client\'s reason', async () => {
    const { url, server, ports } = await serve((req, res) => res.end('{}'));
    try {
      const client = new Cancellation();
      const why = new Error('client left');
      client.abort(why);
      const err = await send(`${url}/x`, { headers: {}, body: '{}', signal: client.signal, timeouts }).then(() => null, (e) => e);
      expect(err).to.equal(why);
      await new Promise((r) => setTimeout(r, 30));
      expect(ports).to.have.length(0);
    } finally {
      await close(server);
    }
  });

  it('a connection refused is an UpstreamError connection; a body cut off mid-way fails the reader', async () => {
    const dead = await serve(() => {});
    const deadUrl = dead.url;
    await close(dead.server);
    const refused = await send(`${deadUrl}/x`, { headers: {}, body: '{}', signal: new Cancellation().signal, timeouts }).then(() => null, (e) => e);
    expect(refused).to.be.instanceOf(UpstreamError);
    expect(refused.kind).to.equal('connection');

    const { url, server } = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
      res.write('part');
      setTimeout(() => res.socket!.destroy(), 10);
    });
    try {
      const res = await send(`${url}/x`, { headers: {}, body: '{}', signal: new Cancellation().signal, timeouts });
      const got: string[] = [];
      const err = await (async () => { try { for await (const c of res.body) got.push(String(c)); } catch (e) { return e; } })();
      expect(got).to.deep.equal(['part']);
      expect(err).to.be.instanceOf(Error);
    } finally {
      await close(server);
    }
    await tick();
  });
});
