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

/**
 * The reader as a synchronous parser: `push` takes the next piece of the body and returns what it completed, in
 * order — events, and (as strings) the lines `onOtherLine` is about; `end` the same at the end of the body. A
 * consumer that parses each network chunk in one step pays for no async iteration per event (readSse below is the
 * async form, and calls `onOtherLine` in its place among the events).
 */
export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private buf = '';
  private data: string[] = [];
  private event: string | undefined;
  private id: string | undefined;
  private pendingCR = false;

  constructor(private readonly opts: Pick<ReadSseOptions, 'dispatchUnterminatedLast'> = {}) {}

  private takeLine(line: string): SseEvent | string | undefined {
    if (line === '') {
      if (!this.data.length && this.event === undefined) return undefined;
      const ev: SseEvent = { event: this.event, data: this.data.join('\n'), ...(this.id !== undefined ? { id: this.id } : {}) };
      this.data = [];
      this.event = undefined;
      return ev;
    }
    if (line.charCodeAt(0) === 58 /* : */) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id') this.id = value;
    else if (field !== 'retry') return line;
    return undefined;
  }

  /** The events (and other lines) completed by this piece of the body: often none or one. */
  push(chunk: Uint8Array | string): Array<SseEvent | string> {
    const out: Array<SseEvent | string> = [];
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (this.pendingCR && text.charCodeAt(0) === 10) text = text.slice(1);
    this.pendingCR = false;
    const buf = this.buf + text;
    let start = 0;
    for (let i = 0; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = buf.slice(start, i);
      if (c === 13) {
        if (i + 1 < buf.length) {
          if (buf.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCR = true;
        }
      }
      start = i + 1;
      const ev = this.takeLine(line);
      if (ev) out.push(ev);
    }
    this.buf = buf.slice(start);
    return out;
  }

  /** At the end of the body: a last event, if the rules let one through (see ReadSseOptions). */
  end(): Array<SseEvent | string> {
    this.buf += this.decoder.decode();
    if (this.buf.length) {
      const ev = this.takeLine(this.buf);
      this.buf = '';
      return ev ? [ev] : [];
    }
    if (this.opts.dispatchUnterminatedLast && this.data.length) {
      return [{ event: this.event, data: this.data.join('\n'), ...(this.id !== undefined ? { id: this.id } : {}) }];
    }
    // Otherwise a final event without its blank line is incomplete: the stream was cut, and it is not dispatched.
    return [];
  }
}

export async function* readSse(body: AsyncIterable<Uint8Array | string>, opts: ReadSseOptions = {}): AsyncGenerator<SseEvent> {
  const parser = new SseParser(opts);
  for await (const chunk of body) {
    for (const item of parser.push(chunk)) {
      if (typeof item === 'string') opts.onOtherLine?.(item);
      else yield item;
    }
  }
  for (const item of parser.end()) {
    if (typeof item === 'string') opts.onOtherLine?.(item);
    else yield item;
  }
}

/** One `data:` event (with an optional event name), ready to write. */
export function sseData(data: string, event?: string): string {
  return (event ? `event: ${event}\n` : '') + `data: ${data}\n\n`;
}
