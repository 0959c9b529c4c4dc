/**
 * `JSON.stringify` of a string or an integer, without the call into V8's runtime for the short, plain values a
 * stream's text deltas carry. Each `JSON.stringify` call crosses into C++ (~1,400 instructions per call for a few
 * characters, counted with `npm run bench:instructions`), and the OpenAI writer made two per text chunk, ~40 per
 * 20-chunk stream. The output is JSON.stringify's, character for character: a string with nothing to escape (no
 * quote, backslash, control character or surrogate) between quotes, anything else through JSON.stringify itself.
 */

/** Strings longer than this go to JSON.stringify at once (its scan is faster than a loop over many characters). */
const SCAN_LIMIT = 256;

/** What `textKind` finds: nothing to escape and only ASCII; nothing to escape; something for JSON.stringify. */
export const PLAIN_ASCII = 0;
export const PLAIN = 1;
export const STRINGIFY = 2;
export type TextKind = typeof PLAIN_ASCII | typeof PLAIN | typeof STRINGIFY;

/**
 * One scan of `text`: STRINGIFY when it is longer than the scan's limit or holds a control character, a quote, a
 * backslash or half of a surrogate pair (JSON.stringify escapes a lone one); else PLAIN_ASCII when every character is
 * up to 0x7f (a frame made only of such literals and ASCII parts is written to the socket as latin1:
 * src/engine/respond.ts), else PLAIN.
 */
export function textKind(text: string): TextKind {
  if (text.length > SCAN_LIMIT) return STRINGIFY;
  let wide = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return STRINGIFY;
    if (c > 0x7f) wide = true;
  }
  return wide ? PLAIN : PLAIN_ASCII;
}

/** `text`'s literal, given its kind. */
export function literalOf(text: string, kind: TextKind): string {
  return kind === STRINGIFY ? JSON.stringify(text) : `"${text}"`;
}

/**
 * The pieces joined into one flat string. A string made with `+` or a template is a tree of its pieces (V8's cons
 * strings) until something reads it whole, and a text kept to start many frames is copied piece by piece again in
 * every write that contains it; `join` copies them once into a sequential string (session 39).
 */
export function flat(...pieces: string[]): string {
  return pieces.join('');
}

export function jsonString(text: string): string {
  return literalOf(text, textKind(text));
}

/** Only characters up to 0x7f. */
export function isAscii(text: string): boolean {
  return !NOT_ASCII.test(text);
}
const NOT_ASCII = /[^\x00-\x7f]/;

/** A number as JSON.stringify writes it; undefined for anything that is not a number. */
export const jsonNumber = (v: unknown): string | undefined => (typeof v !== 'number' ? undefined : Number.isFinite(v) ? String(v) : 'null');

/** A choice's index: almost always 0. */
export function jsonIndex(index: number): string {
  return index === 0 ? '0' : JSON.stringify(index);
}
