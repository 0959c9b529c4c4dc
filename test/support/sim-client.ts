/** Small HTTP helpers for tests that talk to the simulator directly (real fetch over 127.0.0.1). */
import { readSse, type SseEvent } from '../../src/stream/sse.js';

export const ANTHROPIC_HEADERS = { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' };

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal });
}

/** Every SSE event of a response, plus the raw text (for framing assertions). Throws if the stream breaks. */
export async function readEvents(res: Response): Promise<{ events: SseEvent[]; raw: string }> {
  const raw = await res.text();
  const events: SseEvent[] = [];
  for await (const ev of readSse((async function* () { yield raw; })())) events.push(ev);
  return { events, raw };
}

/**
 * Reads SSE events straight off the body until it ends or breaks: `error` is set when the connection died
 * before the body ended (what a client sees for `sim/stream-break`).
 */
export async function readEventsUntilBreak(res: Response): Promise<{ events: SseEvent[]; error?: Error }> {
  const events: SseEvent[] = [];
  try {
    for await (const ev of readSse(res.body as unknown as AsyncIterable<Uint8Array>)) events.push(ev);
    return { events };
  } catch (err) {
    return { events, error: err as Error };
  }
}

/** The parsed JSON of every `data:` event except OpenAI's `[DONE]`. */
export const jsonData = (events: SseEvent[]): any[] => events.filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data));

/** SSE events read straight off the body, each with the time it arrived (ms since the call, `t0`). */
export async function readTimedEvents(res: Response, t0: number): Promise<Array<SseEvent & { at: number }>> {
  const events: Array<SseEvent & { at: number }> = [];
  for await (const ev of readSse(res.body as unknown as AsyncIterable<Uint8Array>)) events.push({ ...ev, at: performance.now() - t0 });
  return events;
}
