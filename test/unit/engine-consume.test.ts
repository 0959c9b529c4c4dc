/**
 * EngineEvents.consume (src/engine/chat.ts): the stream handlers' loop over an opened stream's events. It must keep
 * every rule of `for await` over the same events (the order, the settle or release exactly once before the end is
 * reported, failures, a consumer that stops) and, over an upstream body (BodyEvents), hand each event on inside the
 * body's data callback, without a promise per event.
 */
import { expect } from 'chai';
import { EngineEvents, STOP, type StreamEnd } from '../../src/engine/chat.js';
import { UpstreamError, type StreamEvent } from '../../src/engine/types.js';
import { openaiEvents } from '../../src/providers/openai/index.js';
import { UpstreamBody } from '../../src/providers/http.js';

const usage = { promptTokens: 3, completionTokens: 2, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
const evs: StreamEvent[] = [{ type: 'start', id: 'x', model: 'm' }, { type: 'text', index: 0, text: 'Hel' }, { type: 'text', index: 0, text: 'lo' },
  { type: 'finish', index: 0, finishReason: 'stop' }, { type: 'usage', usage }, { type: 'end' }];
const mapError = (e: unknown) => (e instanceof Error && e.message === 'secret' ? new UpstreamError('connection', 'redacted') : e);

/** A close that records its calls and finishes only when told to. */
function closer() {
  const calls: StreamEnd[] = [];
  let finish!: () => void;
  const gate = new Promise<void>((r) => (finish = r));
  return { calls, finish, close: async (end: StreamEnd) => { calls.push(end); await gate; } };
}

async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let is = false;
  void p.then(() => (is = true), () => (is = true));
  for (let i = 0; i < 20; i++) await Promise.resolve();
  return is;
}

const sse = (chunk: object) => `data: ${JSON.stringify(chunk)}\n\n`;
const text = (t: string) => sse({ id: 'x', model: 'm', choices: [{ index: 0, delta: { content: t } }] });
const FINISH = sse({ id: 'x', model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })
  + sse({ id: 'x', model: 'm', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } });

/** Engine events over a real upstream body read by the OpenAI adapter's reader, opened as the engine opens it. */
async function overBody(close: (end: StreamEnd) => Promise<void>, settled?: () => unknown) {
  const flow = { pause() {}, resume() {}, abort() {} };
  const body = new UpstreamBody(flow);
  const it = openaiEvents(body);
  const firstStep = it.next();
  body.push(Buffer.from(text('Hel')));
  const first = await firstStep; // the start event (the role chunk is the text's own here)
  const events = new EngineEvents(first, () => it.next(), mapError, close, settled, it);
  return { body, events };
}

/** Events handed on through a plain promise step (no polling): the fallback every non-body iterator takes. */
function overSteps(list: StreamEvent[], close: (end: StreamEnd) => Promise<void>, err?: Error) {
  let i = 1;
  const step = () => (i < list.length ? Promise.resolve({ done: false, value: list[i++] } as IteratorResult<StreamEvent>)
    : err ? Promise.reject(err) : Promise.resolve({ done: true, value: undefined } as IteratorResult<StreamEvent>));
  return new EngineEvents({ done: false, value: list[0] }, step, mapError, close);
}

describe('unit: the engine\'s consume (the stream handlers\' loop)', () => {
  it('calls onEvent with the receiver given as `this` (a prototype method and its object, as the stream handlers pass a FrameSink)', async () => {
    const c = closer();
    class Collector {
      got: string[] = [];
      event(this: Collector, ev: StreamEvent): undefined | typeof STOP {
        this.got.push(ev.type);
        return ev.type === 'finish' ? STOP : undefined;
      }
    }
    const sink = new Collector();
    const done = overSteps(evs, c.close).consume(Collector.prototype.event, sink);
    c.finish();
    await done;
    expect(sink.got).to.deep.equal(['start', 'text', 'text', 'finish']);
    expect(c.calls).to.have.length(1);
    expect(c.calls[0]).to.deep.include({ ended: false, failed: false });
  });

  it('over an upstream body: each event is handed on inside the data callback that brought it, in order; the end once the settle finished', async () => {
    const c = closer();
    const { body, events } = await overBody(c.close);
    const got: StreamEvent[] = [];
    const done = events.consume((ev) => { got.push(ev); });
    expect(got.map((e) => e.type), 'the first event and what the first chunk brought, at once').to.deep.equal(['start', 'text']);
    body.push(Buffer.from(text('lo')));
    expect(got.at(-1), 'handed on inside push(): no promise, no microtask').to.deep.equal({ type: 'text', index: 0, text: 'lo' });
    body.push(Buffer.from(text(' you') + text('!'))); // one read, two events
    expect(got.slice(-2).map((e) => (e as { text: string }).text)).to.deep.equal([' you', '!']);
    body.push(Buffer.from(FINISH + 'data: [DONE]\n\n'));
    expect(got.slice(-3).map((e) => e.type)).to.deep.equal(['finish', 'usage', 'end']);
    body.end();
    expect(await isSettled(done), 'the end waits for the settle').to.equal(false);
    expect(c.calls).to.have.length(1);
    expect(c.calls[0]).to.deep.include({ ended: true, failed: false, failure: undefined, chars: 10 });
    expect(c.calls[0].usage).to.deep.include({ promptTokens: 3, completionTokens: 2 });
    c.finish();
    await done;
    expect(c.calls).to.have.length(1);
  });

  it('over an upstream body: a body that breaks mid-way rejects once the release finished, with the events before it handed on', async () => {
    const c = closer();
    const { body, events } = await overBody(c.close);
    const got: string[] = [];
    const done = events.consume((ev) => { got.push(ev.type); });
    body.push(Buffer.from(text('lo')));
    body.fail(new Error('socket reset'));
    expect(await isSettled(done)).to.equal(false);
    expect(c.calls).to.have.length(1);
    expect(c.calls[0]).to.deep.include({ ended: false, failed: true, chars: 5 });
    c.finish();
    const err = await done.then(() => undefined, (e) => e);
    expect(err).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
    expect(err).to.equal(c.calls[0].failure);
    expect(got).to.deep.equal(['start', 'text', 'text']);
  });

  it('over an upstream body: the idle watch\'s timeout, found when an event comes, replaces it', async () => {
    const timeout = new UpstreamError('timeout', 'upstream sent no stream event for 50 ms');
    const c = closer();
    c.finish();
    let late: UpstreamError | undefined;
    const { body, events } = await overBody(c.close, () => late);
    const got: string[] = [];
    const done = events.consume((ev) => { got.push(ev.type); });
    late = timeout;
    body.push(Buffer.from(text('lo')));
    expect(await done.then(() => null, (e) => e)).to.equal(timeout);
    expect(got, 'the late event is not handed on').to.deep.equal(['start', 'text']);
    expect(c.calls).to.deep.equal([{ ended: false, failed: true, failure: timeout, usage: null, chars: 3 }]);
  });

  for (const lane of ['an upstream body', 'promise steps'] as const) {
    /** The six events of `evs`, over the lane under test. */
    const open = async (close: (end: StreamEnd) => Promise<void>) => {
      if (lane === 'promise steps') return { events: overSteps(evs, close), feed: () => {} };
      const { body, events } = await overBody(close);
      return { events, feed: () => body.push(Buffer.from(text('lo') + FINISH + 'data: [DONE]\n\n')) };
    };

    describe(`over ${lane}`, () => {
      it('STOP is a break: the release (not ended, not failed) finishes before consume resolves', async () => {
        const c = closer();
        const { events, feed } = await open(c.close);
        let n = 0;
        const done = events.consume(() => (++n === 2 ? STOP : undefined));
        feed();
        await new Promise((r) => setImmediate(r));
        expect(n, 'nothing after STOP').to.equal(2);
        expect(await isSettled(done)).to.equal(false);
        expect(c.calls).to.deep.equal([{ ended: false, failed: false, failure: undefined, usage: null, chars: 3 }]);
        c.finish();
        await done;
        expect(await events.next()).to.deep.include({ done: true });
        expect(c.calls).to.have.length(1);
      });

      it('a promise returned is waited for before the next event (a full socket), and may resolve to STOP', async () => {
        const c = closer();
        c.finish();
        const { events, feed } = await open(c.close);
        const got: string[] = [];
        let release!: (v?: unknown) => void;
        const done = events.consume((ev) => {
          got.push(ev.type);
          if (got.length === 2) return new Promise((r) => (release = r));
          if (got.length === 4) return Promise.resolve(STOP);
          return undefined;
        });
        feed();
        await new Promise((r) => setImmediate(r));
        expect(got, 'held at the second event').to.deep.equal(['start', 'text']);
        release();
        await done;
        expect(got).to.deep.equal(['start', 'text', 'text', 'finish']);
        expect(c.calls).to.deep.equal([{ ended: false, failed: false, failure: undefined, usage: null, chars: 5 }]);
      });

      it('an error thrown by the consumer is a break too: the release (not failed), then the error', async () => {
        const c = closer();
        c.finish();
        const { events, feed } = await open(c.close);
        let n = 0;
        const done = events.consume(() => { if (++n === 3) throw new Error('writer broke'); });
        feed();
        const err = await done.then(() => undefined, (e) => e);
        expect(err).to.have.property('message', 'writer broke');
        expect(c.calls).to.deep.equal([{ ended: false, failed: false, failure: undefined, usage: null, chars: 5 }]);
      });

      it('every event in order, then the end after the settle (ended, usage, characters)', async () => {
        const c = closer();
        c.finish();
        const { events, feed } = await open(c.close);
        const got: StreamEvent[] = [];
        const done = events.consume((ev) => { got.push(ev); });
        feed();
        await done;
        expect(got.map((e) => e.type)).to.deep.equal(evs.map((e) => e.type));
        expect(c.calls).to.have.length(1);
        expect(c.calls[0]).to.deep.include({ ended: true, failed: false, chars: 5 });
        expect(c.calls[0].usage).to.deep.include({ promptTokens: 3, completionTokens: 2 });
      });
    });
  }

  it('over promise steps: a failing upstream rejects with mapError\'s error after the release; no terminator is stream_broken', async () => {
    for (const [list, err, check] of [
      [evs.slice(0, 2), new Error('secret'), (e: unknown) => expect(e).to.be.instanceOf(UpstreamError).with.property('message', 'redacted')],
      [evs.slice(0, 3), undefined, (e: unknown) => expect(e).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken')],
    ] as const) {
      const c = closer();
      const events = overSteps(list as StreamEvent[], c.close, err);
      const done = events.consume(() => undefined);
      expect(await isSettled(done)).to.equal(false);
      c.finish();
      const e = await done.then(() => undefined, (x) => x);
      check(e);
      expect(c.calls).to.have.length(1);
      expect(c.calls[0]).to.deep.include({ ended: false, failed: true, failure: e });
    }
  });
});
