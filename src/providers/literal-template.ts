/**
 * Most events of a streamed answer are text deltas that differ only in their text: a server writes each one with the
 * same fields in the same order. Once one was parsed, its bytes before and after the text's string literal are kept
 * as a template, and a later event made of that same prefix, one JSON string literal and that same suffix is that
 * same object with another text: its text is read without a JSON parse. Anything else (another shape, a literal
 * that is not one plain string) is left to the parse. Used by the OpenAI mapper (its text chunks) and the Anthropic
 * stream (its `text_delta`s).
 */

/** A JSON string literal's inside that needs decoding, or is not one: a quote, a backslash, a control character. */
const NOT_PLAIN = /["\\\x00-\x1f]/;

/**
 * The text of a JSON string literal's inside (between its quotes): itself when it has nothing to decode, else what
 * JSON makes of it; undefined when it is not one literal's inside (a raw control character, a quote not escaped).
 * Shared by the template's matches and the chunk shapes' text holes (src/providers/chunk-shapes.ts).
 */
export function literalText(inside: string): string | undefined {
  if (!NOT_PLAIN.test(inside)) return inside;
  try {
    const text: unknown = JSON.parse(`"${inside}"`);
    return typeof text === 'string' ? text : undefined;
  } catch {
    return undefined;
  }
}
/** The text a template is checked with: no upstream text is this. */
const PROBE = '\u0001probe\u0002';
/** A stream whose text events keep changing shape (a field that varies per event) stops being templated. */
const MAX_TEMPLATES = 4;

export class LiteralTemplate {
  /** The current template ('' for none): the event's bytes before and after the text's literal. */
  private prefix = '';
  private suffix = '';
  private learned = 0;

  /** There is a template to match. */
  get active(): boolean {
    return this.prefix !== '';
  }

  /** Another template may still be learned (at most MAX_TEMPLATES per stream). */
  get canLearn(): boolean {
    return this.learned < MAX_TEMPLATES;
  }

  /** The text of an event that is the template with another literal; undefined when it is not. */
  match(data: string): string | undefined {
    const { prefix, suffix } = this;
    const end = data.length - suffix.length;
    if (end - prefix.length < 2 || data.charCodeAt(prefix.length) !== 34 || data.charCodeAt(end - 1) !== 34) return undefined;
    // A slice compared with === rather than startsWith/endsWith: a quarter of the time for a ~200-character
    // prefix (V8 compares a slice with memcmp, startsWith a character at a time).
    if (data.slice(0, prefix.length) !== prefix || data.slice(end) !== suffix) return undefined;
    // escapes (or not one literal at all): JSON decides, on the literal alone
    return literalText(data.slice(prefix.length + 1, end - 1));
  }

  /**
   * Takes `prefix` and `suffix` as the template, known to surround the text's literal in an event of this stream
   * (a chunk read through a shape, src/providers/chunk-shapes.ts: its probe checked that place).
   */
  adopt(prefix: string, suffix: string): void {
    this.learned++;
    this.prefix = prefix;
    this.suffix = suffix;
  }

  /**
   * Keeps `data` (an event just parsed, whose one text is `text`) as the template, if the text's literal is where it
   * seems: the event rebuilt with a probe text in that place must parse to an object that `holds(parsed, probe)`
   * says carries the probe as that same text. (The literal is searched as JSON.stringify writes it; an upstream that
   * escapes differently, or a string elsewhere that holds the same characters, fails and the stream is simply parsed.)
   */
  learn(data: string, text: string, holds: (parsed: any, probe: string) => boolean): void {
    this.learned++;
    this.prefix = '';
    const lit = JSON.stringify(text);
    const at = data.indexOf(lit);
    if (at < 0 || data.indexOf(lit, at + 1) >= 0) return;
    const prefix = data.slice(0, at);
    const suffix = data.slice(at + lit.length);
    try {
      if (!holds(JSON.parse(prefix + JSON.stringify(PROBE) + suffix), PROBE)) return;
    } catch {
      return;
    }
    this.prefix = prefix;
    this.suffix = suffix;
  }
}
