/**
 * Preloaded into the gateway and the bare proxy by `npm run bench:timeline` (`node --import`): a timestamp for each
 * step of a request on its way to the first byte, from Node's and undici's diagnostics channels only (no change to
 * the code measured). SIGUSR2 starts recording; the next SIGUSR2 stops it and writes the marks to MARKS_OUT.
 *
 * - `arrived`: the request's head was parsed (`http.server.request.start`);
 * - `called`: the upstream request was made (`undici:request:create`, inside the dispatch);
 * - `sent`: undici wrote its head to the upstream socket (`undici:client:sendHeaders`);
 * - `answered`: the upstream's response head arrived (`undici:request:headers`);
 * - `wrote`: the response's first bytes handed to the client socket's handle (the socket's `_writeGeneric` after the
 *   response's first `_writeRaw`: the headers, and the first frame when it is written in the same tick). Until
 *   session 67 the mark was the `_writeRaw` itself, which for a corked write (a stream's head, `startSse`) is the
 *   time it was queued, not the end of the tick when it leaves, after the rest of that tick's work.
 *
 * Each mark is `[name, µs]`, in the order they happened. With `TIMELINE_TAGGED` set (`--together`: many requests
 * at once), each mark is `[name, µs, seq]`: the client's sequence number, from its `x-bench-seq` header (arrived,
 * wrote) or from `bench #<seq>` in the body undici sends upstream (called; sent and answered are its request's);
 * that upstream request gets the header too (undici's `addHeader`, as tracing does), so a preloaded upstream (the
 * simulator) tags its own marks of it.
 * The times are `process.hrtime`'s, the system's monotonic clock, so they compare with the client's.
 * Plain JavaScript: it runs beside the bundle.
 */
import dc from 'node:diagnostics_channel';
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';

const out = process.env.MARKS_OUT;
const marks = [];
let on = false;
const now = () => Number(process.hrtime.bigint() / 1000n);
const tagged = !!process.env.TIMELINE_TAGGED;
/** The sequence number of an undici request (from its body, at `called`). */
const seqOfUpstream = new WeakMap();
const seqOfBody = (body) => {
  const m = body === null || body === undefined ? null : /bench #(\d+)/.exec(typeof body === 'string' ? body : Buffer.isBuffer(body) ? body.toString('latin1') : '');
  return m ? Number(m[1]) : undefined;
};
const mark = (name) => () => { if (on) marks.push([name, now()]); };
const markTagged = (name, seqOf) => (msg) => { if (on) marks.push([name, now(), seqOf(msg)]); };

if (!tagged) {
  dc.subscribe('http.server.request.start', mark('arrived'));
  dc.subscribe('undici:request:create', mark('called'));
  dc.subscribe('undici:client:sendHeaders', mark('sent'));
  dc.subscribe('undici:request:headers', mark('answered'));
} else {
  dc.subscribe('http.server.request.start', markTagged('arrived', (m) => Number(m.request.headers['x-bench-seq'])));
  dc.subscribe('undici:request:create', markTagged('called', (m) => {
    const seq = seqOfBody(m.request.body);
    if (seq !== undefined) {
      seqOfUpstream.set(m.request, seq);
      m.request.addHeader('x-bench-seq', String(seq));
    }
    return seq;
  }));
  dc.subscribe('undici:client:sendHeaders', markTagged('sent', (m) => seqOfUpstream.get(m.request)));
  dc.subscribe('undici:request:headers', markTagged('answered', (m) => seqOfUpstream.get(m.request)));
}

const FIRST = Symbol('timeline: first write marked');
const PENDING = Symbol('timeline: the first write to mark');
const writeRaw = http.OutgoingMessage.prototype._writeRaw;
http.OutgoingMessage.prototype._writeRaw = function (...args) {
  if (on && this instanceof http.ServerResponse && !this[FIRST] && this.socket) {
    this[FIRST] = true;
    // marked when its bytes are handed to the socket's handle (below): a corked write leaves at the uncork
    this.socket[PENDING] = tagged ? Number(this.req?.headers['x-bench-seq']) : -1;
  }
  return writeRaw.apply(this, args);
};
const writeGeneric = net.Socket.prototype._writeGeneric;
net.Socket.prototype._writeGeneric = function (...args) {
  const seq = this[PENDING];
  if (seq !== undefined) {
    this[PENDING] = undefined;
    if (on) marks.push(tagged ? ['wrote', now(), seq] : ['wrote', now()]);
  }
  return writeGeneric.apply(this, args);
};

process.on('SIGUSR2', () => {
  if (!on) {
    on = true;
    return;
  }
  on = false;
  if (out) {
    // written whole, then renamed: the benchmark reads it as soon as it appears
    fs.writeFileSync(`${out}.tmp`, JSON.stringify(marks));
    fs.renameSync(`${out}.tmp`, out);
  }
  marks.length = 0;
});
