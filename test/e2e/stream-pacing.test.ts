/**
 * Streamed chunks are forwarded as they arrive, never gathered (issue 9): the upstream simulator writes each text
 * chunk 150 ms after the one before (`sim/chunks-4-every-150ms`), and the official SDKs, reading through the
 * gateway, must see each chunk at its own moment - for every upstream wire format behind each client API. A gateway
 * that buffered the stream, or any part of it, would deliver chunks together at the end.
 *
 * The bounds are loose on purpose (this is not a timing benchmark): consecutive text chunks at least 60 ms apart
 * and the first at least 300 ms before the last, against 150 and 450 ms as sent; buffered chunks arrive < 5 ms apart.
 * The other way round, a client that stops reading holds the upstream back instead of the gateway reading the rest
 * of the stream into its memory (the simulator counts the pieces it got out).
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { offer } from '../support/catalog.js';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { startE2E, usageRows, type E2E } from '../support/e2e.js';

const PACED = 'sim/chunks-4-every-150ms';
/**
 * A long stream: ~20 MB of frames to the client, ~120 MB from the upstream (each chunk padded with 1,000 characters of
 * `obfuscation`), more than the sockets between the simulator, the gateway and a client hold. Unpadded (~20 MB from
 * the upstream), a gateway's upstream socket whose receive buffer had grown while it read fast (up to tcp_rmem's 32
 * MB here) and the simulator's send buffer sometimes took the rest of the stream, and the upstream finished although
 * the gateway had stopped reading (1 run in 5).
 */
const LONG = 'sim/chunks-99999-padded-1000';
const WORDS = ['w1 ', 'w2 ', 'w3 ', 'w4 '];

/** Each text piece with the time (ms since the request was made) it reached the client. */
type Arrival = { text: string; at: number };

function expectPaced(arrivals: Arrival[]) {
  expect(arrivals.map((a) => a.text)).to.deep.equal(WORDS);
  const gaps = arrivals.slice(1).map((a, i) => a.at - arrivals[i].at);
  for (const gap of gaps) expect(gap, `gaps between text chunks: ${gaps.map((g) => g.toFixed(1)).join(', ')} ms`).to.be.at.least(60);
  expect(arrivals[3].at - arrivals[0].at).to.be.at.least(300);
}

describe('e2e: streamed chunks reach the client as the upstream writes them', function () {
  this.timeout(30_000);
  let e: E2E;
  let key: string;
  let userId: number;

  before(async () => {
    e = await startE2E({
      gateways: { openai: 'openai', anthropic: 'anthropic', google: 'gemini' },
      offers: [
        offer('openai', PACED, 'paced/openai'),
        offer('anthropic', PACED, 'paced/anthropic'),
        offer('google', `models/${PACED}`, 'paced/gemini'),
        offer('openai', LONG, 'long/openai'),
      ],
    });
    ({ key, userId } = await e.gateway.newKey(1));
  });
  after(async () => e?.close());
  beforeEach(() => e.sim.reset());

  for (const format of ['openai', 'anthropic', 'gemini'] as const) {
    it(`/v1/chat/completions (openai SDK) from an ${format} upstream`, async () => {
      const client = new OpenAI({ apiKey: key, baseURL: `${e.origin}/v1`, maxRetries: 0 });
      const t0 = performance.now();
      const stream = await client.chat.completions.create({ model: `paced/${format}`, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      const arrivals: Arrival[] = [];
      let finish: string | null = null;
      for await (const chunk of stream) {
        const text = chunk.choices[0]?.delta?.content;
        if (text) arrivals.push({ text, at: performance.now() - t0 });
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expectPaced(arrivals);
      expect(finish).to.equal('stop');
      expect(e.sim.calls.map((c) => c.format)).to.deep.equal([format]);
      // the stream was billed as a whole once it ended: 4 words of completion
      expect((await usageRows(e.gateway, userId)).at(-1)).to.include({ model: `paced/${format}`, status: 'success', completion_tokens: 4 });
    });
  }

  for (const format of ['anthropic', 'openai'] as const) {
    it(`/v1/messages (Anthropic SDK) from an ${format} upstream`, async () => {
      const client = new Anthropic({ apiKey: key, baseURL: e.origin, maxRetries: 0 });
      const t0 = performance.now();
      const stream = await client.messages.create({ model: `paced/${format}`, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      const arrivals: Arrival[] = [];
      let stop: string | null = null;
      for await (const ev of stream) {
        if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') arrivals.push({ text: ev.delta.text, at: performance.now() - t0 });
        if (ev.type === 'message_delta') stop = ev.delta.stop_reason;
      }
      expectPaced(arrivals);
      expect(stop).to.equal('end_turn');
      expect(e.sim.calls.map((c) => c.format)).to.deep.equal([format]);
    });
  }

  // A client that stops reading: the gateway waits on its full socket, so its reading of the upstream stops and the
  // upstream waits too (nothing is read into the gateway's memory), and once the client reads again every event
  // arrives, in order, and the stream is billed as a whole.
  for (const path of ['/v1/chat/completions', '/v1/messages'] as const) {
    it(`a client that stops reading holds the upstream back (${path}); everything arrives once it reads again`, async () => {
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        // a connection of its own (not one the other case's client grew the receive buffer of by reading fast)
        const req = http.request(`${e.origin}${path}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } }, resolve);
        req.on('error', reject);
        req.end(JSON.stringify({ model: 'long/openai', stream: true, max_tokens: 200000, messages: [{ role: 'user', content: 'hi' }] }));
      });
      expect(res.statusCode).to.equal(200);
      res.pause();
      // the upstream's progress, until it has not moved for 250 ms (it sends the whole stream in about a second)
      let sent = -1;
      for (let still = 0, i = 0; still < 5 && i < 400; i++) {
        await sleep(50);
        const now = e.sim.calls.at(-1)?.piecesSent ?? 0;
        still = now === sent && now > 0 ? still + 1 : 0;
        sent = now;
      }
      expect(sent, 'the upstream waits while the client does not read').to.be.above(0).and.below(99_999);
      res.setEncoding('utf8');
      let body = '';
      for await (const piece of res) body += piece;
      const words = path === '/v1/chat/completions' ? [...body.matchAll(/"content":"w(\d+) "/g)] : [...body.matchAll(/"text":"w(\d+) "/g)];
      expect(words.length).to.equal(99_999);
      expect(words.every((m, i) => Number(m[1]) === i + 1), 'in order').to.equal(true);
      expect(body.trimEnd().endsWith(path === '/v1/chat/completions' ? 'data: [DONE]' : '{"type":"message_stop"}')).to.equal(true);
      expect((await usageRows(e.gateway, userId)).at(-1)).to.include({ model: 'long/openai', status: 'success', completion_tokens: 99_999 });
    });
  }
});
