/**
 * Streamed chunks are forwarded as they arrive, never gathered (issue 9): the upstream simulator writes each text
 * chunk 150 ms after the one before (`sim/chunks-4-every-150ms`), and the official SDKs, reading through the
 * gateway, must see each chunk at its own moment - for every upstream wire format behind each client API. A gateway
 * that buffered the stream, or any part of it, would deliver chunks together at the end.
 *
 * The bounds are loose on purpose (this is not a timing benchmark): consecutive text chunks at least 60 ms apart
 * and the first at least 300 ms before the last, against 150 and 450 ms as sent; buffered chunks arrive < 5 ms apart.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { offer } from '../support/catalog.js';
import { startE2E, usageRows, type E2E } from '../support/e2e.js';

const PACED = 'sim/chunks-4-every-150ms';
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
});
