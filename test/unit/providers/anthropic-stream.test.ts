import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { UpstreamError, type StreamEvent } from '../../../src/engine/types.js';
import { anthropicEvents } from '../../../src/providers/anthropic/stream.js';
import { bodyOf, chunkings, collect, shape, textOf, thinkingOf, toolCallsOf } from './support.js';

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/anthropic/${name}`, import.meta.url));

/** Expected outcome of each fixture, worked out by reading it. */
const EXPECTED: Record<string, (events: StreamEvent[], error: unknown) => void> = {
  'text.txt': (events, error) => {
    expect(error).to.equal(undefined);
    expect(events[0]).to.deep.equal({ type: 'start', id: 'msg_01XFDUDYJgAACzvnptvVoYEL', model: 'claude-sonnet-4-20250514' });
    expect(textOf(events)).to.equal('Grüße aus 東京 🗼!');
    expect(shape(events)).to.deep.equal(['start', 'text', 'finish', 'usage', 'end']);
    expect(events.find((e) => e.type === 'finish')).to.deep.equal({ type: 'finish', index: 0, finishReason: 'stop', stopSequence: null });
    expect(events.find((e) => e.type === 'usage')).to.deep.equal({
      type: 'usage', usage: { promptTokens: 12, completionTokens: 9, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
    });
  },
  'tools.txt': (events, error) => {
    expect(error).to.equal(undefined);
    expect(textOf(events)).to.equal("I'll check both cities.");
    // Content blocks 1 and 2 are tool calls 0 and 1: tool indexes count tool blocks only.
    expect(toolCallsOf(events)).to.deep.equal([
      { id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', arguments: '{"city": "Paris", "unit": "c"}' },
      { id: 'toolu_01PGhPYqMeuWbzJbKp8yLkyG', name: 'get_time', arguments: '{"tz":"Europe/Berlin"}' },
    ]);
    expect(events.find((e) => e.type === 'finish')).to.include({ finishReason: 'tool_calls' });
    // 25 uncached + 1800 read from the cache.
    expect(events.find((e) => e.type === 'usage')).to.deep.equal({
      type: 'usage', usage: { promptTokens: 1825, completionTokens: 89, cachedTokens: 1800, cacheWriteTokens: 0, reasoningTokens: 0 },
    });
    expect(events.at(-1)).to.deep.equal({ type: 'end' });
  },
  'thinking.txt': (events, error) => {
    expect(error).to.equal(undefined);
    expect(thinkingOf(events)).to.equal('Let me add 17 and 25.\n17 + 25 = 42.');
    const signed = events.filter((e) => e.type === 'thinking' && e.signature);
    expect(signed).to.deep.equal([{ type: 'thinking', index: 0, text: '', signature: 'EqQBCkgIARABGAIiQL2TZ0sVTpQ9bX4b6Gm1WlOq2tD8xH0rXc1Yk3nA9fJvB7sQ==' }]);
    expect(textOf(events)).to.equal('The answer is 42.');
    expect(shape(events)).to.deep.equal(['start', 'thinking', 'text', 'finish', 'usage', 'end']);
    // 40 uncached + 120 written to the cache.
    expect(events.find((e) => e.type === 'usage')).to.deep.equal({
      type: 'usage', usage: { promptTokens: 160, completionTokens: 57, cachedTokens: 0, cacheWriteTokens: 120, reasoningTokens: 0 },
    });
  },
  'server-tool.txt': (events, error) => {
    expect(error).to.equal(undefined);
    // Anthropic ran the web search itself: only the client's tool_use block is a tool call.
    expect(toolCallsOf(events)).to.deep.equal([{ id: 'toolu_01NotifyUserSample0001', name: 'notify', arguments: '{"msg":"sunny"}' }]);
    expect(textOf(events)).to.equal('Paris is sunny (24°C).');
    expect(events.find((e) => e.type === 'finish')).to.include({ finishReason: 'tool_calls' });
    expect(events.find((e) => e.type === 'usage')).to.deep.include({ usage: { promptTokens: 2100, completionTokens: 120, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 } });
  },
  'stop-sequence.txt': (events, error) => {
    expect(error).to.equal(undefined);
    expect(textOf(events)).to.equal('1, 2, 3, ');
    expect(events.find((e) => e.type === 'finish')).to.deep.equal({ type: 'finish', index: 0, finishReason: 'stop', stopSequence: '4' });
  },
  'error-overloaded.txt': (events, error) => {
    expect(textOf(events)).to.equal('Once upon');
    expect(error).to.be.instanceOf(UpstreamError).with.property('kind', 'server_error');
    expect((error as Error).message).to.contain('overloaded_error');
    expect(events.some((e) => e.type === 'end' || e.type === 'finish')).to.equal(false);
  },
  'cut.txt': (events, error) => {
    expect(textOf(events)).to.equal('Half a sen');
    expect(error).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
    expect(events.some((e) => e.type === 'end')).to.equal(false);
  },
};

describe('anthropic stream mapping over recorded-style streams', () => {
  for (const [name, check] of Object.entries(EXPECTED)) {
    for (const { name: cut, chunks } of chunkings(fixture(name))) {
      it(`${name}, ${cut} chunks`, async () => {
        const { events, error } = await collect(anthropicEvents(bodyOf(chunks), false));
        check(events, error);
        expect(events.some((e) => e.type === 'anthropic_raw')).to.equal(false);
      });
    }
  }

  it('native: each upstream event also comes raw, before its mapped events, with ping but not error', async () => {
    const { events } = await collect(anthropicEvents(bodyOf(chunkings(fixture('tools.txt'))[1]!.chunks), true));
    const raw = events.filter((e) => e.type === 'anthropic_raw');
    const names = raw.map((e) => (e.type === 'anthropic_raw' ? e.event : ''));
    expect(names).to.deep.equal([
      'message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'ping', 'content_block_delta',
      'content_block_stop', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(raw[0]).to.deep.include({ event: 'message_start' });
    expect((raw[0] as { data: any }).data.message.id).to.equal('msg_014p7gG3wDgGV9EUtLvnow3U');
    // The raw event precedes what it maps to.
    const firstStart = events.findIndex((e) => e.type === 'start');
    expect(events[firstStart - 1]).to.deep.include({ type: 'anthropic_raw', event: 'message_start' });
    expect(events.slice(-2)).to.deep.equal([{ type: 'anthropic_raw', event: 'message_stop', data: { type: 'message_stop' }, json: '{"type":"message_stop"}' }, { type: 'end' }]);
    // each raw event carries the upstream's own line (the fixture's ping is spaced as Anthropic wrote it)
    expect(raw.find((e) => e.type === 'anthropic_raw' && e.event === 'ping')).to.deep.include({ json: '{"type": "ping"}' });
    // The mapped events are the same as without native.
    const plain = await collect(anthropicEvents(bodyOf([fixture('tools.txt')]), false));
    expect(events.filter((e) => e.type !== 'anthropic_raw')).to.deep.equal(plain.events);

    const failed = await collect(anthropicEvents(bodyOf([fixture('error-overloaded.txt')]), true));
    expect(failed.events.filter((e) => e.type === 'anthropic_raw').map((e) => (e as { event: string }).event)).to.not.include('error');
    expect(failed.error).to.have.property('kind', 'server_error');
  });

  it('text deltas of one shape are read from a template: the same events and raw lines as parsing, one parse for the first of them', async () => {
    const sse = (data: unknown, event: string) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    const words = ['Hello', ' "quoted"', ' back\\slash', ' é 漢字 🙂', ' line\nbreak', ' \u2028', 'msg_1', ' end', ...Array.from({ length: 12 }, (_, i) => ` w${i}`)];
    const text = sse({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [], usage: { input_tokens: 3, output_tokens: 1 } } }, 'message_start')
      + sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start')
      + words.map((w) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: w } }, 'content_block_delta')).join('')
      + sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop')
      + sse({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } }, 'message_delta')
      + sse({ type: 'message_stop' }, 'message_stop');
    const parse = JSON.parse;
    let parses = 0;
    JSON.parse = ((...a: Parameters<typeof parse>) => { parses++; return parse(...a); }) as typeof parse;
    let native: Awaited<ReturnType<typeof collect>>;
    try {
      native = await collect(anthropicEvents(bodyOf([Buffer.from(text)]), true));
    } finally {
      JSON.parse = parse;
    }
    expect(native.error).to.equal(undefined);
    expect(textOf(native.events)).to.equal(words.join(''));
    // message_start, content_block_start, the first delta and its template's check, content_block_stop,
    // message_delta, message_stop (7), and the literal alone of the three texts with escapes (a quote, a backslash, a
    // line break): not the 19 deltas after the first, as parsing each would
    expect(parses).to.equal(10);
    // every raw delta is the upstream's own line, with the data parsing would give
    const deltas = native.events.filter((e) => e.type === 'anthropic_raw' && e.event === 'content_block_delta') as Array<{ data: unknown; json: string }>;
    expect(deltas).to.have.length(words.length);
    for (const d of deltas) expect(d.data).to.deep.equal(JSON.parse(d.json));
    // the same mapped events as a stream cut one byte at a time
    const bytes = Buffer.from(text);
    const cut = await collect(anthropicEvents(bodyOf(Array.from(bytes, (_, i) => bytes.subarray(i, i + 1))), false));
    expect(cut.events).to.deep.equal(native.events.filter((e) => e.type !== 'anthropic_raw'));
  });

  it('rejects a data line that is not JSON as an invalid response', async () => {
    const body = Buffer.from('event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"x","usage":{}}}\n\nevent: content_block_delta\ndata: {not json\n\n');
    const { events, error } = await collect(anthropicEvents(bodyOf([body]), false));
    expect(events).to.deep.equal([{ type: 'start', id: 'm', model: 'x' }]);
    expect(error).to.be.instanceOf(UpstreamError).with.property('kind', 'invalid_response');
  });
});
