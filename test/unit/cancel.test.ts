import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Cancellation } from '../../src/cancel.js';
import { send } from '../../src/providers/http.js';
import { UpstreamError } from '../../src/engine/types.js';

/** The per-request cancellation that stands in for AbortController (src/cancel.ts). */
describe('Cancellation', () => {
  it('has AbortSignal\'s shape: aborted, reason, one abort event, throwIfAborted', () => {
    const c = new Cancellation();
    const seen: unknown[] = [];
    c.signal.addEventListener('abort', () => seen.push(c.signal.reason), { once: true });
    expect(c.signal.aborted).to.equal(false);
    expect(() => c.signal.throwIfAborted()).to.not.throw();
    const why = new Error('client left');
    c.abort(why);
    c.abort(new Error('again')); // a second abort changes nothing
    expect(c.signal.aborted).to.equal(true);
    expect(c.signal.reason).to.equal(why);
    expect(seen).to.deep.equal([why]);
    expect(() => c.signal.throwIfAborted()).to.throw('client left');
    const d = new Cancellation();
    d.abort();
    expect((d.reason as DOMException).name).to.equal('AbortError');
  });

  it('calls each abort listener once, with the signal as this; keeps a listener added twice once; removes; ignores other types', () => {
    const c = new Cancellation();
    const calls: string[] = [];
    const fn = function (this: unknown, ev: Event) { calls.push(`fn ${this === c} ${ev.type}`); };
    const gone = () => calls.push('removed');
    c.signal.addEventListener('abort', fn);
    c.signal.addEventListener('abort', fn, { once: true });
    c.signal.addEventListener('abort', { handleEvent: (ev: Event) => calls.push(`object ${ev.type}`) });
    c.signal.addEventListener('abort', gone);
    c.signal.removeEventListener('abort', gone);
    c.signal.addEventListener('other' as 'abort', () => calls.push('other'));
    c.abort();
    c.abort();
    c.signal.addEventListener('abort', () => calls.push('late')); // after the abort: never called
    expect(calls).to.deep.equal(['fn true abort', 'object abort']);
  });

  it("is accepted by undici's own request() as its signal", async () => {
    const { request } = await import('undici');
    const server = http.createServer(() => { /* never answers */ });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const c = new Cancellation();
      const call = request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`, { signal: c.signal }).then(() => null, (e) => e);
      setTimeout(() => c.abort(new Error('stop')), 30);
      const err = await call;
      expect(err).to.be.instanceOf(Error);
      expect((err as Error).message).to.equal('stop');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('aborts an upstream call in flight: the upstream sees the connection close, the caller an abort (not an upstream fault)', async () => {
    let closed!: () => void;
    const upstreamClosed = new Promise<void>((r) => (closed = r));
    const server = http.createServer((req, res) => {
      res.on('close', () => closed()); // never answers
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const client = new Cancellation();
      const call = send(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`, {
        headers: { 'content-type': 'application/json' }, body: '{}', signal: client.signal,
        timeouts: { connectMs: 5000, firstByteMs: 5000, totalMs: 5000 },
      });
      setTimeout(() => client.abort(), 50);
      const err = await call.then(() => null, (e) => e);
      expect(err).to.be.instanceOf(Error);
      expect(err).to.not.be.instanceOf(UpstreamError);
      await upstreamClosed;
    } finally {
      server.close();
    }
  });

  it('the total timeout of an upstream call still ends it, as an UpstreamError timeout', async () => {
    const server = http.createServer(() => { /* never answers */ });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const err = await send(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`, {
        headers: {}, body: '{}', signal: new Cancellation().signal, timeouts: { connectMs: 5000, firstByteMs: 5000, totalMs: 80 },
      }).then(() => null, (e) => e);
      expect(err).to.be.instanceOf(UpstreamError);
      expect(err.kind).to.equal('timeout');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
