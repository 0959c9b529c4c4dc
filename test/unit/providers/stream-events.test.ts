/**
 * The rules every adapter's stream keeps, whatever its wire format, through each adapter's own event function fed
 * as the adapter feeds it (an upstream body fed from a Readable, with the call's signal as chatStream gives it): the events
 * before a failure, then the failure; nothing read after the terminator; an early stop lets go of the body; a body
 * that breaks off mid-way is stream_broken.
 */
import { expect } from 'chai';
import { Readable } from 'node:stream';
import { UpstreamError, type StreamEvent } from '../../../src/engine/types.js';
import { anthropicEvents } from '../../../src/providers/anthropic/stream.js';
import { geminiEvents } from '../../../src/providers/gemini/stream.js';
import { openaiEvents } from '../../../src/providers/openai/index.js';
import { bodyFrom, bodyOf } from '../../support/upstream-body.js';
import type { UpstreamBody } from '../../../src/providers/http.js';

type Events = (body: UpstreamBody) => AsyncIterableIterator<StreamEvent>;

const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
const live = () => new AbortController().signal;

interface Wire {
  name: string;
  events: Events;
  /** The opening frames, then one text event's frame. */
  open: string;
  text: (t: string) => string;
  /** The terminator's frames (none for Gemini: its stream ends with the body). */
  close?: string;
  /** What the events are before any text. */
  lead: string[];
}

const wires: Wire[] = [
  {
    name: 'OpenAI', events: (b) => openaiEvents(b),
    open: '', text: (t) => sse({ id: 'x', model: 'm', choices: [{ index: 0, delta: { content: t } }] }),
    close: 'data: [DONE]\n\n', lead: ['start'],
  },
  {
    name: 'Anthropic', events: (b) => anthropicEvents(b, false, live()),
    open: sse({ type: 'message_start', message: { id: 'msg_1', model: 'claude', usage: { input_tokens: 3, output_tokens: 1 } } }, 'message_start')
      + sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
    text: (t) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: t } }, 'content_block_delta'),
    close: sse({ type: 'message_stop' }, 'message_stop'), lead: ['start'],
  },
  {
    name: 'Gemini', events: (b) => geminiEvents(b, 'gemini-test', live()),
    open: '', text: (t) => sse({ candidates: [{ content: { role: 'model', parts: [{ text: t }] }, index: 0 }] }), lead: ['start'],
  },
];

const kinds = (evs: StreamEvent[]) => evs.map((e) => (e.type === 'text' ? e.text : e.type));

async function collect(it: AsyncIterableIterator<StreamEvent>) {
  const evs: StreamEvent[] = [];
  try {
    for await (const e of it) evs.push(e);
    return { evs, err: undefined as unknown };
  } catch (err) {
    return { evs, err };
  }
}

for (const w of wires) {
  describe(`unit: ${w.name} stream events`, () => {
    it('delivers the events before malformed data, then the failure', async () => {
      const { evs, err } = await collect(w.events(bodyOf(w.open + w.text('a') + w.text('b') + 'data: {"oops": [\n\n')));
      expect(kinds(evs)).to.deep.equal([...w.lead, 'a', 'b']);
      expect(err).to.be.instanceOf(UpstreamError);
      expect((err as UpstreamError).kind).to.be.oneOf(['stream_broken', 'invalid_response']);
    });

    if (w.close) {
      it('reads nothing after its terminator, and ends with `end`', async () => {
        const { evs, err } = await collect(w.events(bodyOf(w.open + w.text('a'), w.close! + w.text('after'))));
        expect(err).to.equal(undefined);
        expect(kinds(evs).filter((k) => k !== 'usage' && k !== 'finish')).to.deep.equal([...w.lead, 'a', 'end']);
      });

      it('a body that ends without its terminator is stream_broken', async () => {
        const { evs, err } = await collect(w.events(bodyOf(w.open + w.text('a'))));
        expect(kinds(evs)).to.deep.equal([...w.lead, 'a']);
        expect(err).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
      });
    }

    it('a consumer that stops early lets go of the body; the iterator is then done', async () => {
      const source = new Readable({ read() {} });
      source.push(Buffer.from(w.open + w.text('a')));
      const { body, flow } = bodyFrom(source);
      const it = w.events(body);
      const got: StreamEvent[] = [];
      while (got.length < w.lead.length + 1) got.push((await it.next()).value as StreamEvent);
      expect(kinds(got)).to.deep.equal([...w.lead, 'a']);
      expect(await it.return!()).to.deep.equal({ value: undefined, done: true });
      expect(await it.next()).to.deep.equal({ value: undefined, done: true });
      // let go: what still comes is read off and dropped (the connection can be kept), up to 256 KB, then the call is aborted
      source.push(Buffer.alloc(200 * 1024));
      await new Promise((r) => setImmediate(r));
      expect(flow.aborted, 'read off, not aborted').to.equal(undefined);
      source.push(Buffer.alloc(100 * 1024));
      await new Promise((r) => setImmediate(r));
      expect(flow.aborted, 'aborted past 256 KB').to.be.instanceOf(Error);
    });

    it('pieces that arrived before the reader (one socket read) are read together after the first: events and characters split across them intact', async () => {
      const { body } = bodyFrom(new Readable({ read() {} }));
      // cut every few bytes: through the `data:` prefixes, the JSON, the blank lines and 'é' / '→' (two and three bytes)
      // (Gemini's stream has no terminator: it ends with a finish reason and the body's end)
      const end = w.close ?? sse({ candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }] });
      const bytes = Buffer.from(w.open + w.text('héllo') + w.text('a→b') + end);
      for (let i = 0; i < bytes.length; i += 7) body.push(bytes.subarray(i, i + 7));
      if (!w.close) body.end();
      const { evs, err } = await collect(w.events(body));
      expect(err).to.equal(undefined);
      expect(kinds(evs).filter((k) => k !== 'usage' && k !== 'finish' && k !== 'end')).to.deep.equal([...w.lead, 'héllo', 'a→b']);
    });

    it('the first piece is taken alone (its events go out before the rest is decoded), the later ones together', async () => {
      const { body } = bodyFrom(new Readable({ read() {} }));
      const first = w.open + w.text('a');
      body.push(Buffer.from(first));
      body.push(Buffer.from(w.text('b')));
      body.push(Buffer.from(w.text('c')));
      const it = w.events(body);
      const got: StreamEvent[] = [];
      while (got.length < w.lead.length + 1) got.push((await it.next()).value as StreamEvent);
      expect(kinds(got)).to.deep.equal([...w.lead, 'a']);
      expect(String(body.shift()), 'the second piece still waits in the body').to.equal(w.text('b'));
      body.push(Buffer.from(w.text('d')));
      expect(kinds([(await it.next()).value, (await it.next()).value])).to.deep.equal(['c', 'd']);
      await it.return!();
    });

    it('a body that breaks off mid-way: the events before it, then stream_broken', async () => {
      const source = new Readable({ read() {} });
      source.push(Buffer.from(w.open + w.text('a')));
      const it = w.events(bodyFrom(source).body);
      const pending = collect(it);
      setTimeout(() => source.destroy(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })), 5);
      const { evs, err } = await pending;
      expect(kinds(evs)).to.deep.equal([...w.lead, 'a']);
      expect(err).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
    });
  });
}
