/**
 * One SSE reader and one SSE writer.
 *
 * The reader turns a byte stream into events per the WHATWG rules: lines end in LF, CRLF or CR (a CR at the
 * end of a chunk may be half of a CRLF, so it waits for the next chunk); `:` lines are comments (keep-alives
 * like `: PROCESSING`) and are dropped; multi-line `data:` fields join with LF; an event is dispatched at a
 * blank line. Bytes are decoded with a streaming UTF-8 decoder, so a character split across chunks survives, and a
 * byte-order mark at the start of the stream is dropped (the UTF-8 decode the SSE rules name).
 */
import { StringDecoder } from 'node:string_decoder';

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
  // node:string_decoder rather than TextDecoder: a third of the time per piece (ICU's converter) in a
  // micro-benchmark of an OpenAI stream; the BOM TextDecoder drops is dropped by hand (`started`).
  // (An ASCII piece taken as a latin1 slice after `buffer.isAscii` instead: ~1,200 instructions a piece against the
  // decoder's ~650, by `npm run bench:instructions` in session 30.)
  private readonly decoder = new StringDecoder('utf8');
  private started = false;
  private buf = '';
  /** The pending event's data lines, joined with LF (undefined: none yet). */
  private data: string | undefined;
  private event: string | undefined;
  private id: string | undefined;
  private pendingCR = false;

  constructor(private readonly opts: Pick<ReadSseOptions, 'dispatchUnterminatedLast'> = {}) {}

  private takeLine(line: string): SseEvent | string | undefined {
    if (line === '') {
      if (this.data === undefined && this.event === undefined) return undefined;
      const ev = this.dispatch();
      this.event = undefined;
      return ev;
    }
    if (line.charCodeAt(0) === 58 /* : */) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.addData(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id') this.id = value;
    else if (field !== 'retry') return line;
    return undefined;
  }

  /** A data line's value, joined to the pending event's earlier ones with LF. */
  private addData(value: string): void {
    this.data = this.data === undefined ? value : `${this.data}\n${value}`;
  }

  /** The pending event; its data lines are cleared. */
  private dispatch(): SseEvent {
    const data = this.data ?? '';
    this.data = undefined;
    return this.id !== undefined ? { event: this.event, data, id: this.id } : { event: this.event, data };
  }

  /** The events (and other lines) completed by this piece of the body: often none or one. */
  push(chunk: Uint8Array | string): Array<SseEvent | string> {
    const out: Array<SseEvent | string> = [];
    let text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    if (!this.started && text.length) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.pendingCR && text.charCodeAt(0) === 10) text = text.slice(1);
    this.pendingCR = false;
    const buf = this.buf.length ? this.buf + text : text;
    // Line ends are found with indexOf (native) rather than by testing every character; a CR is rare (most
    // servers end lines with LF alone), so its search usually finds nothing once and stops.
    let start = 0;
    let lf = buf.indexOf('\n');
    let cr = buf.indexOf('\r');
    while (lf !== -1 || cr !== -1) {
      const from = start;
      let end: number;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        end = lf;
        start = lf + 1;
      } else {
        end = cr;
        if (cr + 1 < buf.length) start = buf.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
        else {
          this.pendingCR = true; // the LF of a CRLF may come with the next piece
          start = cr + 1;
        }
      }
      // A `data: ` line (the most of a stream) is taken as it is: its value after the prefix, without the line's slice,
      // the colon's search and the field's and the value's slices that the general rule makes (the same value).
      // (`data: ` by its character codes: `startsWith` at an offset is a builtin call per line)
      if (end - from > 6 && buf.charCodeAt(from) === 100 && buf.charCodeAt(from + 1) === 97 && buf.charCodeAt(from + 2) === 116
        && buf.charCodeAt(from + 3) === 97 && buf.charCodeAt(from + 4) === 58 && buf.charCodeAt(from + 5) === 32) {
        if (start === end + 1 && buf.charCodeAt(start) === 10 && this.data === undefined && this.event === undefined && this.id === undefined) {
          // The usual event, one `data: ` line and the blank line after it (`data: …\n\n`): dispatched at once, the blank
          // line stepped over (what the general rule does in two turns of this loop).
          out.push({ event: undefined, data: buf.slice(from + 6, end) });
          start++;
        } else this.addData(buf.slice(from + 6, end));
      } else {
        const ev = this.takeLine(buf.slice(from, end));
        if (ev) out.push(ev);
      }
      if (lf !== -1 && lf < start) lf = buf.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = buf.indexOf('\r', start);
    }
    this.buf = start === 0 ? buf : buf.slice(start);
    return out;
  }

  /** At the end of the body: a last event, if the rules let one through (see ReadSseOptions). */
  end(): Array<SseEvent | string> {
    this.buf += this.decoder.end();
    if (this.buf.length) {
      const ev = this.takeLine(this.buf);
      this.buf = '';
      return ev ? [ev] : [];
    }
    if (this.opts.dispatchUnterminatedLast && this.data !== undefined) return [this.dispatch()];
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
