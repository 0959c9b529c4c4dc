/** Helpers for the provider adapter tests: chunked bodies, event collection, a local fake upstream. */
import { Readable } from 'node:stream';
import type { UpstreamBody } from '../../../src/providers/http.js';
import { bodyFrom } from '../../support/upstream-body.js';
import type { ChatRequest, StreamEvent } from '../../../src/engine/types.js';
import type { GatewayInfo } from '../../../src/catalog/types.js';
import type { Target } from '../../../src/providers/types.js';

/**
 * The same bytes cut in awkward places: whole, 1 byte at a time, small odd sizes (which cut `data:` prefixes,
 * blank lines and CRLF pairs), and cuts inside every multi-byte UTF-8 character.
 */
export function chunkings(bytes: Buffer): Array<{ name: string; chunks: Buffer[] }> {
  const every = (n: number) => {
    const out: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += n) out.push(bytes.subarray(i, i + n));
    return out;
  };
  const midUtf8: Buffer[] = [];
  let start = 0;
  for (let i = 1; i < bytes.length; i++) {
    // 10xxxxxx is a continuation byte: cutting before it splits a character.
    if ((bytes[i]! & 0xc0) === 0x80) {
      midUtf8.push(bytes.subarray(start, i));
      start = i;
    }
  }
  midUtf8.push(bytes.subarray(start));
  return [
    { name: 'whole', chunks: [bytes] },
    { name: '1-byte', chunks: every(1) },
    { name: '3-byte', chunks: every(3) },
    { name: '7-byte', chunks: every(7) },
    { name: 'mid-UTF-8', chunks: midUtf8 },
  ];
}

/** An upstream body (as undici's handler feeds it) whose network reads are `chunks`, then its end. */
export function bodyOf(chunks: Buffer[]): UpstreamBody {
  return bodyFrom(Readable.from(chunks)).body;
}

export interface Collected {
  events: StreamEvent[];
  error?: unknown;
}

/** Drains a stream; a throw is kept (with the events before it), never lost. */
export async function collect(stream: AsyncIterable<StreamEvent>): Promise<Collected> {
  const events: StreamEvent[] = [];
  try {
    for await (const ev of stream) events.push(ev);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

/** Text of one choice as a client would see it: its deltas joined. */
export const textOf = (events: StreamEvent[], index = 0) =>
  events.flatMap((e) => (e.type === 'text' && e.index === index ? [e.text] : [])).join('');

export const thinkingOf = (events: StreamEvent[], index = 0) =>
  events.flatMap((e) => (e.type === 'thinking' && e.index === index ? [e.text] : [])).join('');

/** Tool calls rebuilt from start + delta events, per toolIndex. */
export function toolCallsOf(events: StreamEvent[], index = 0): Array<{ id: string; name: string; arguments: string }> {
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  for (const e of events) {
    if (e.type === 'tool_call_start' && e.index === index) calls[e.toolIndex] = { id: e.id, name: e.name, arguments: '' };
    if (e.type === 'tool_call_delta' && e.index === index) calls[e.toolIndex]!.arguments += e.arguments;
  }
  return calls;
}

/** The event types in order, with consecutive repeats collapsed (text deltas vary with chunking upstream). */
export const shape = (events: StreamEvent[]) => events.map((e) => e.type).filter((t, i, a) => i === 0 || a[i - 1] !== t);

export function baseRequest(over: Partial<ChatRequest> = {}): ChatRequest {
  return { model: 'client-model', messages: [{ role: 'user', content: 'Hi' }], stream: false, includeUsage: false, extra: {}, ...over };
}

const gateway: GatewayInfo = {
  id: 'test', name: 'Test', wireFormat: 'openai', baseUrl: '', keyEnv: 'TEST_API_KEY', color: '#000000',
  priority: 'fast', siteUrl: '', logoUrl: '', aliases: [],
};

export function targetFor(baseUrl: string, upstreamModel: string, apiKey = 'test-key-123'): Target {
  return { gateway, baseUrl, apiKey, upstreamModel, timeouts: { connectMs: 2000, firstByteMs: 5000, totalMs: 10000 } };
}

// The fake upstream is the suite's shared one (test/support/upstream.ts).
export { startFakeUpstream as fakeUpstream, type FakeUpstream, type SeenRequest } from '../../support/upstream.js';
