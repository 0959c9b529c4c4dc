/**
 * The upload limit as the gateway's memory sees it. The client streams the multipart body over a raw socket from
 * one reused 64 KB buffer, so this process's memory growth is the gateway's. Refused uploads must be answered
 * 413 without being read into memory: at once when Content-Length announces too much, and as soon as a chunked
 * stream passes the limit; the connection is closed after the answer, so the rest is never read.
 */
import { expect } from 'chai';
import http from 'node:http';
import { startMediaStack, type MediaStack } from '../support/media-stack.js';
import { mp3 } from '../support/media-files.js';

const MB = 1024 * 1024;

interface Outcome { status: number; body: any; written: number; total: number }

/** POSTs a multipart transcription whose file is `fileBytes` long (an MP3 header, then zeros). */
function streamUpload(origin: string, key: string, fileBytes: number, chunked: boolean): Promise<Outcome> {
  const boundary = 'limit-test-boundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="long.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const first = mp3(10);
  const zeros = Buffer.alloc(64 * 1024);
  const total = head.length + fileBytes + tail.length;
  return new Promise((resolve, reject) => {
    let written = 0;
    let answered = false;
    const headers: Record<string, string> = { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` };
    if (!chunked) headers['content-length'] = String(total);
    const req = http.request(`${origin}/v1/audio/transcriptions`, { method: 'POST', headers });
    req.on('response', (res) => {
      answered = true;
      const at = written;
      const parts: Buffer[] = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(parts).toString()), written: at, total }));
      res.on('error', reject);
    });
    req.on('error', (err) => { if (!answered) reject(err); }); // EPIPE / ECONNRESET after the answer are expected
    const pump = () => {
      while (!answered && !req.destroyed) {
        let piece: Buffer;
        if (written === 0) piece = head;
        else if (written < head.length + first.length) piece = first;
        else if (written < head.length + fileBytes) piece = zeros.subarray(0, Math.min(zeros.length, head.length + fileBytes - written));
        else { req.end(tail); written += tail.length; return; }
        written += piece.length;
        if (!req.write(piece)) { req.once('drain', pump); return; }
      }
    };
    pump();
  });
}

async function measured(fn: () => Promise<Outcome>): Promise<Outcome & { arrayBuffers: number; rss: number }> {
  global.gc?.();
  const before = process.memoryUsage();
  const out = await fn();
  const after = process.memoryUsage();
  return { ...out, arrayBuffers: after.arrayBuffers - before.arrayBuffers, rss: after.rss - before.rss };
}

describe('e2e: upload limit and the gateway\'s memory', function () {
  this.timeout(60_000);

  describe('default limit (25 MB)', () => {
    let s: MediaStack;
    let key: string;
    before(async () => {
      s = await startMediaStack();
      ({ key } = await s.gateway.newKey(1));
    });
    after(() => s?.close());

    it('26 MB announced by Content-Length: 413 before the body is read; memory grows far less than 26 MB', async () => {
      const out = await measured(() => streamUpload(s.origin, key, 26 * MB, false));
      expect(out.status).to.equal(413);
      expect(out.body.error).to.include({ type: 'invalid_request_error', code: 'payload_too_large', param: 'file' });
      expect(out.body.error.message).to.contain('limit of 26214400 bytes');
      expect(out.written).to.be.below(out.total); // answered while the client was still sending
      expect(out.arrayBuffers).to.be.below(8 * MB);
      expect(out.rss).to.be.below(20 * MB);
      expect(s.sim.calls).to.have.length(0);
    });
  });

  describe('a 1 MB limit and a chunked upload without Content-Length', () => {
    let s: MediaStack;
    let key: string;
    before(async () => {
      s = await startMediaStack({ env: { UPLOAD_LIMIT: '1mb' } });
      ({ key } = await s.gateway.newKey(1));
    });
    after(() => s?.close());

    it('26 MB streamed: 413 as soon as 1 MB is passed, the rest never read; memory stays small', async () => {
      const out = await measured(() => streamUpload(s.origin, key, 26 * MB, true));
      expect(out.status).to.equal(413);
      expect(out.body.error.message).to.contain('limit of 1048576 bytes');
      expect(out.written).to.be.below(8 * MB);
      expect(out.arrayBuffers).to.be.below(8 * MB);
      expect(out.rss).to.be.below(20 * MB);
    });

    it('exactly 1 MB of file is accepted (the limit is inclusive)', async () => {
      const out = await streamUpload(s.origin, key, MB, true);
      expect(out.status).to.equal(200);
      expect(out.body.text).to.equal(`Transcribed ${MB} bytes of long.mp3`);
    });
  });
});
