/**
 * `JSON.stringify` of a string or an integer, without the call into V8's runtime for the short, plain values a
 * stream's text deltas carry. Each `JSON.stringify` call crosses into C++ (~1,400 instructions per call for a few
 * characters, counted with `npm run bench:instructions`), and the OpenAI writer made two per text chunk, ~40 per
 * 20-chunk stream. The output is JSON.stringify's, character for character: a string with nothing to escape (no
 * quote, backslash, control character or surrogate) between quotes, anything else through JSON.stringify itself.
 */

/** Strings longer than this go to JSON.stringify at once (its scan is faster than a loop over many characters). */
const SCAN_LIMIT = 256;

export function jsonString(text: string): string {
  if (text.length > SCAN_LIMIT) return JSON.stringify(text);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // a control character, '"', '\\', or half of a surrogate pair (JSON.stringify escapes a lone one)
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(text);
  }
  return `"${text}"`;
}

/**
 * The same literal as `jsonString`, or undefined when `text` is not one the writer can call ASCII: longer than the
 * scan's limit, or holding anything past 0x7f or anything `jsonString` would escape. A frame made only of such
 * literals and ASCII parts is written to the socket as latin1 (src/engine/respond.ts: no UTF-8 length scan and
 * encoding of the tick's frames).
 */
export function asciiString(text: string): string | undefined {
  if (text.length > SCAN_LIMIT) return undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7f) return undefined;
  }
  return `"${text}"`;
}

/** Only characters up to 0x7f. */
export function isAscii(text: string): boolean {
  return !NOT_ASCII.test(text);
}
const NOT_ASCII = /[^\x00-\x7f]/;

/** A choice's index: almost always 0. */
export function jsonIndex(index: number): string {
  return index === 0 ? '0' : JSON.stringify(index);
}
