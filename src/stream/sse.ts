/**
 * One SSE reader and one SSE writer.
 *
 * The reader turns a byte stream into events per the WHATWG rules: lines end in LF, CRLF or CR (a CR at the
 * end of a chunk may be half of a CRLF, so it waits for the next chunk); `:` lines are comments (keep-alives
 * like `: PROCESSING`) and are dropped; multi-line `data:` fields join with LF; an event is dispatched at a
 * blank line. Bytes are decoded with a streaming UTF-8 decoder, so a character split across chunks survives.
 */

export interface SseEvent {
  event: string | undefined;
  data: string;
  id?: string;
}

export interface ReadSseOptions {
  /**
   * Called with each non-empty line that is neither a comment nor a field the reader knows (`data`, `event`,
   * `id`, `retry`). The SSE rules say to ignore such lines, and the reader does; this hook lets a caller notice
   * them, because Google appends a raw (unframed) JSON error body to a stream that fails mid-way.
   */
  onOtherLine?: (line: string) => void;
  /**
   * At the end of the body, also dispatch a last event whose lines all arrived whole (each ended by a line
   * break) but which lacks its closing blank line. Recorded Google streams end so. A half line is never
   * dispatched either way: that stream was cut.
   */
  dispatchUnterminatedLast?: boolean;
}

export async function* readSse(body: AsyncIterable<Uint8Array | string>, opts: ReadSseOptions = {}): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder('utf-8');
  let buf = '';
  let data: string[] = [];
  let event: string | undefined;
  let id: string | undefined;
  let pendingCR = false;

  const takeLine = (line: string): SseEvent | undefined => {
    if (line === '') {
      if (!data.length && event === undefined) return undefined;
      const ev: SseEvent = { event, data: data.join('\n'), ...(id !== undefined ? { id } : {}) };
      data = [];
      event = undefined;
      return ev;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id') id = value;
    else if (field !== 'retry') opts.onOtherLine?.(line);
    return undefined;
  };

  for await (const chunk of body) {
    let text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (pendingCR && text.startsWith('\n')) text = text.slice(1);
    pendingCR = false;
    buf += text;
    let start = 0;
    for (let i = 0; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = buf.slice(start, i);
      if (c === 13) {
        if (i + 1 < buf.length) {
          if (buf.charCodeAt(i + 1) === 10) i++;
        } else {
          pendingCR = true;
        }
      }
      start = i + 1;
      const ev = takeLine(line);
      if (ev) yield ev;
    }
    buf = buf.slice(start);
  }
  buf += decoder.decode();
  if (buf.length) {
    const ev = takeLine(buf);
    if (ev) yield ev;
  } else if (opts.dispatchUnterminatedLast && data.length) {
    yield { event, data: data.join('\n'), ...(id !== undefined ? { id } : {}) };
    return;
  }
  // Otherwise a final event without its blank line is incomplete: the stream was cut, and it is not dispatched.
}

/** One `data:` event (with an optional event name), ready to write. */
export function sseData(data: string, event?: string): string {
  return (event ? `event: ${event}\n` : '') + `data: ${data}\n\n`;
}
