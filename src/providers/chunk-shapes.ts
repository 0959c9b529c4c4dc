/**
 * The shapes of an upstream's stream chunks, kept from one stream to the next. An OpenAI-compatible server writes
 * every chunk of a kind (the role chunk, a text delta, the finish, the usage) with the same fields in the same order;
 * from one chunk to the next, and from one stream to the next, what changes is a few values: the id, `created`, the
 * text, the usage's numbers, an `obfuscation` padding. A shape is such a chunk's bytes cut at those values (its
 * holes) into fixed pieces, with the object it parsed to. A later chunk made of the same fixed pieces, with a value
 * of the hole's kind in each hole, is that object with those values: it is read without a JSON parse (~16,000
 * instructions a chunk; four or five chunks a stream are not text deltas that the stream's own template,
 * literal-template.ts, reads: docs/PERFORMANCE.md, session 32).
 *
 * Why a match is that object. A shape is kept only after a probe: the chunk with other values in every hole
 * (letters in a string, other digits in an integer) must parse to the chunk's object with exactly those values at
 * the holes' paths and nothing else changed. So each hole is the whole inside of one string literal, or one whole
 * number token, at its path. A match puts in a string hole only characters that need no escape (no quote, no
 * backslash, no control character), in an integer hole only 1–15 digits without a leading zero, and in a text hole
 * one string literal's inside (its escapes decoded by JSON itself): the chunk's tokens, and so its object, are the
 * shape's with those values. Anything else is not a match, and the chunk is parsed as before.
 *
 * Which values are holes: the chunk's `id`, `created` and `obfuscation`, every integer under `usage`, and each
 * choice's delta `content`, `reasoning_content` and `reasoning` (text holes). Everything else is fixed: a chunk that
 * differs there (another model, a finish reason, a tool call) is another shape or none.
 *
 * A non-streamed answer (a `chat.completion`) is read the same way (`AnswerShapes.readWhole`), its choices' `message`
 * in place of the `delta`: its JSON parse was ~27,000 instructions of a request's ~480,000 at c=1 (session 52).
 */

import { isDeepStrictEqual } from 'node:util';
import { literalText } from './literal-template.js';

const INTEGER = /^(?:0|[1-9][0-9]{0,14})$/;
/** Shapes kept per upstream model: a stream needs four or five; more means chunks that keep changing. */
const MAX_SHAPES = 8;
/** Upstream models with shapes; past it all are dropped (they are learned again at one parse each). */
const MAX_FAMILIES = 512;
/** Learning attempts per stream (each costs a scan and a probe parse), for streams whose chunks fit no shape. */
export const MAX_LEARNS_PER_STREAM = 4;
/**
 * Learning attempts a family of whole answers has in hand (`readWhole`): each learn spends one and each match gives one
 * back, so answers that never come again in a kept shape stop being learned after this many.
 */
const MAX_WHOLE_CREDIT = 4;

type Kind = 'str' | 'int' | 'text';
type Key = string | number;
type Path = Key[];

/** Where a hole's value goes: the object or array that holds it in the shape's object, and its key there. */
interface Slot { holder: any; key: Key }

export interface ShapeMatch {
  /**
   * The chunk's object: the shape's own, with this chunk's values written into the holes. Valid until the next
   * match of the shape (a whole answer's until its `use` returns: AnswerShapes.readWhole): read it at once and keep
   * none of its objects (what it is used for takes strings and numbers from it). Rebuilding the objects on the way
   * to each hole instead cost more than the holes' scan: V8 copies objects of many maps (hidden classes) at one
   * spread site through its runtime (~2,200 instructions each).
   */
  chunk: any;
  /** A text hole's literal, as offsets of `data` (its inside: after the opening quote, at the closing one); -1: none. */
  textStart: number;
  textEnd: number;
}

class Shape {
  constructor(
    /** The bytes before the first hole, between the holes and after the last: holes.length + 1 pieces. */
    private readonly fixed: string[],
    private readonly kinds: Kind[],
    private readonly slots: Slot[],
    private readonly parsed: any,
  ) {}

  match(data: string): ShapeMatch | undefined {
    const { fixed, kinds, slots } = this;
    // the end first: it tells most kinds of chunk apart (a text delta, the finish, the usage) in one comparison
    const last = fixed[kinds.length];
    if (data.slice(data.length - last.length) !== last) return undefined;
    // Values are written into the holes as they are read: a match that fails half-way leaves some, and the next
    // match that succeeds writes every hole.
    let pos = 0;
    let textStart = -1;
    let textEnd = -1;
    let texts = 0;
    for (let i = 0; i < kinds.length; i++) {
      const f = fixed[i];
      // a slice compared with === (memcmp), not startsWith (a character at a time): literal-template.ts
      if (data.slice(pos, pos + f.length) !== f) return undefined;
      pos += f.length;
      const slot = slots[i];
      let end: number;
      switch (kinds[i]) {
        case 'str': {
          // to the closing quote, through characters that need no escape (no backslash, no control character)
          end = pos;
          let c = data.charCodeAt(end);
          while (c !== 34 && c >= 32 && c !== 92) c = data.charCodeAt(++end);
          if (c !== 34) return undefined;
          slot.holder[slot.key] = data.slice(pos, end);
          break;
        }
        case 'int': {
          // 1–15 digits, no leading zero: an integer JSON reads exactly
          end = pos;
          let n = 0;
          for (let c = data.charCodeAt(end); c >= 48 && c <= 57; c = data.charCodeAt(++end)) n = n * 10 + (c - 48);
          const digits = end - pos;
          if (digits === 0 || digits > 15 || (digits > 1 && data.charCodeAt(pos) === 48)) return undefined;
          slot.holder[slot.key] = n;
          break;
        }
        default: {
          end = closingQuote(data, pos);
          if (end < 0) return undefined;
          // escapes: JSON decodes them; a raw control character is not JSON, and the whole chunk's parse will say so
          const text = literalText(data.slice(pos, end));
          if (text === undefined) return undefined;
          slot.holder[slot.key] = text;
          if (texts++ === 0) { textStart = pos; textEnd = end; }
        }
      }
      pos = end;
    }
    if (data.length - pos !== last.length) return undefined; // (the end was compared first)
    // more than one text (two choices, or a text and a reasoning): no template can start from it
    if (texts > 1) textStart = textEnd = -1;
    return { chunk: this.parsed, textStart, textEnd };
  }

  /**
   * Empties the string and text holes: their values are slices of the text they were read from, and would keep all
   * of it alive (a whole answer of megabytes) for as long as the shape is kept.
   */
  clear(): void {
    const { kinds, slots } = this;
    for (let i = 0; i < kinds.length; i++) if (kinds[i] !== 'int') slots[i].holder[slots[i].key] = '';
  }
}

/** A string of its own, not a slice that keeps the text it was cut from (once per shape learned). */
const ownCopy = (s: string): string => JSON.parse(JSON.stringify(s)) as string;

/** The shapes of one upstream model's chunks. */
export class ChunkShapes {
  protected shapes: Shape[] = [];

  /** How many shapes are kept. */
  get size(): number {
    return this.shapes.length;
  }

  /**
   * The chunk `data` read through a shape; undefined when none fits. `cursor.at`: the shape to try first, then
   * the ones after it (a stream's chunks mostly come in the order their shapes were learned: the role, a text, the
   * finish, the usage); set to the one that fitted.
   */
  match(data: string, cursor: { at: number }): ShapeMatch | undefined {
    const { shapes } = this;
    const n = shapes.length;
    for (let k = 0; k < n; k++) {
      const i = (cursor.at + k) % n;
      const m = shapes[i].match(data);
      if (m) {
        cursor.at = i;
        return m;
      }
    }
    return undefined;
  }

  /**
   * Keeps `data` (a chunk just parsed to `parsed`) as a shape if its holes pass the probe; returns its match (whose
   * text offsets a per-stream template can start from; its chunk's strings are emptied), or undefined when it was not
   * kept.
   */
  learn(data: string, parsed: unknown): ShapeMatch | undefined {
    try {
      return this.tryLearn(data, parsed);
    } catch {
      return undefined; // e.g. a path through a value a duplicate key replaced: left to the parse
    }
  }

  private tryLearn(data: string, parsed: unknown): ShapeMatch | undefined {
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || 'error' in parsed) return undefined;
    const spans = valueSpans(data);
    if (!spans) return undefined;
    const holes = spans.filter((s) => kindOf(s) !== undefined);
    if (!holes.length) return undefined;
    const kinds = holes.map((s) => kindOf(s)!);
    const seen = new Set<string>();
    for (const h of holes) {
      const k = JSON.stringify(h.path);
      if (seen.has(k)) return undefined; // a duplicate key: left to the parse
      seen.add(k);
    }
    const fixed: string[] = [];
    let pos = 0;
    for (const h of holes) {
      fixed.push(ownCopy(data.slice(pos, h.start)));
      pos = h.end;
    }
    fixed.push(ownCopy(data.slice(pos)));
    // The probe: other values in every hole must give the object with those values there and nothing else changed.
    // (a probe equal to the value it replaces would prove nothing about that hole: another one then)
    const probes = holes.map((h, i) => {
      const was = data.slice(h.start, h.end);
      if (kinds[i] === 'int') return String(700000000 + i) === was ? 800000000 + i : 700000000 + i;
      return `q${i}probe` === was ? `q${i}other` : `q${i}probe`;
    });
    const probeText = fixed.map((f, i) => (i < probes.length ? f + String(probes[i]) : f)).join('');
    let probed: unknown;
    try {
      probed = JSON.parse(probeText);
    } catch {
      return undefined;
    }
    const expected = structuredClone(parsed);
    holes.forEach((h, i) => { const s = slotOf(expected, h.path); s.holder[s.key] = probes[i]; });
    if (!isDeepStrictEqual(probed, expected)) return undefined;
    // The shape keeps a copy of its own: `parsed` is the caller's, and a match writes into the shape's object.
    const own = structuredClone(parsed);
    const shape = new Shape(fixed, kinds, holes.map((h) => slotOf(own, h.path)), own);
    const m = shape.match(data);
    if (!m) return undefined; // e.g. an integer with an exponent's worth of digits: never matches, not kept
    shape.clear(); // (what learns reads of the match is its text's offsets)
    if (this.shapes.length >= MAX_SHAPES) this.shapes.shift();
    this.shapes.push(shape);
    return m;
  }
}

/**
 * The shapes of one upstream model's non-streamed answers (a family apart from its stream chunks'), read one whole text
 * at a time, with the shape the last one fitted and the learning attempts left (a stream keeps both per stream).
 */
export class AnswerShapes extends ChunkShapes {
  private readonly cursor = { at: 0 };
  private credit = MAX_WHOLE_CREDIT;

  /**
   * `use` of a whole JSON text (a non-streamed answer) as its object: read through a shape that fits, else `parse`d
   * and, when `learnable` says the object may come again in this shape and the family has learning credit left,
   * learned. A shape's object is the shape's own (see ShapeMatch.chunk), valid during `use` only: its strings are
   * emptied after it, so that the shape keeps nothing of the answer's text; `use` keeps none of its objects.
   */
  readWhole<T>(data: string, parse: (data: string) => unknown, learnable: (parsed: any) => boolean, use: (answer: any) => T): T {
    const m = this.match(data, this.cursor);
    if (m) {
      if (this.credit < MAX_WHOLE_CREDIT) this.credit++;
      const shape = this.shapes[this.cursor.at]; // (the one that fitted, whatever `use` does)
      try {
        return use(m.chunk);
      } finally {
        shape.clear();
      }
    }
    const parsed = parse(data);
    if (this.credit > 0 && learnable(parsed)) {
      this.credit--;
      this.learn(data, parsed);
    }
    return use(parsed);
  }
}

/** One kind's shapes (stream chunks, whole answers) per upstream gateway and model. */
class Families<S extends ChunkShapes> {
  private readonly byGateway = new Map<string, Map<string, S>>();
  private count = 0;

  constructor(private readonly make: () => S) {}

  /** The shapes of `gateway`'s `model` (found by the two strings, no key built per call). */
  of(gateway: string, model: string): S {
    let shapes = this.byGateway.get(gateway)?.get(model);
    if (!shapes) {
      if (this.count >= MAX_FAMILIES) {
        this.byGateway.clear();
        this.count = 0;
      }
      let byModel = this.byGateway.get(gateway);
      if (!byModel) this.byGateway.set(gateway, (byModel = new Map()));
      byModel.set(model, (shapes = this.make()));
      this.count++;
    }
    return shapes;
  }
}

const chunkFamilies = new Families(() => new ChunkShapes());
const wholeFamilies = new Families(() => new AnswerShapes());

/** The stream chunks' shapes of `gateway`'s `model`. */
export const shapesFor = (gateway: string, model: string): ChunkShapes => chunkFamilies.of(gateway, model);
/** The non-streamed answers' shapes of `gateway`'s `model` (`readWhole`). */
export const wholeShapesFor = (gateway: string, model: string): AnswerShapes => wholeFamilies.of(gateway, model);

interface Span { path: Path; start: number; end: number; type: 'string' | 'number' }

const TEXT_FIELDS = new Set(['content', 'reasoning_content', 'reasoning']);

function kindOf(s: Span): Kind | undefined {
  const p = s.path;
  if (s.type === 'number') {
    return (p.length === 1 && p[0] === 'created') || (p[0] === 'usage' && p.length > 1) ? 'int' : undefined;
  }
  if (p.length === 1 && (p[0] === 'id' || p[0] === 'obfuscation')) return 'str';
  if (p.length === 4 && p[0] === 'choices' && typeof p[1] === 'number' && (p[2] === 'delta' || p[2] === 'message') && TEXT_FIELDS.has(p[3] as string)) return 'text';
  return undefined;
}

/**
 * Where the string and number values of a JSON text are (a string's span is its inside, without the quotes), with
 * their paths; only integers as numbers (a number token in any other form is a fixed part). Undefined for a text
 * this scanner does not follow (the probe decides in the end: a wrong span fails it).
 */
export function valueSpans(text: string): Span[] | undefined {
  const out: Span[] = [];
  let i = 0;
  const ws = () => {
    for (let c = text.charCodeAt(i); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++i));
  };
  /** The end of the string literal whose opening quote is at i (the offset of its closing quote). */
  const stringEnd = (): number => {
    const j = closingQuote(text, i + 1);
    if (j < 0) throw new Error('unterminated');
    return j;
  };
  const value = (path: Path, depth: number): void => {
    if (depth > 32) throw new Error('too deep');
    ws();
    const c = text.charCodeAt(i);
    if (c === 123) { // {
      i++;
      ws();
      if (text.charCodeAt(i) === 125) { i++; return; }
      for (;;) {
        ws();
        if (text.charCodeAt(i) !== 34) throw new Error('key');
        const end = stringEnd();
        const raw = text.slice(i + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        i = end + 1;
        ws();
        if (text.charCodeAt(i) !== 58) throw new Error(':');
        i++;
        value([...path, key], depth + 1);
        ws();
        const d = text.charCodeAt(i++);
        if (d === 125) return;
        if (d !== 44) throw new Error(',');
      }
    }
    if (c === 91) { // [
      i++;
      ws();
      if (text.charCodeAt(i) === 93) { i++; return; }
      for (let n = 0; ; n++) {
        value([...path, n], depth + 1);
        ws();
        const d = text.charCodeAt(i++);
        if (d === 93) return;
        if (d !== 44) throw new Error(',');
      }
    }
    if (c === 34) {
      const end = stringEnd();
      out.push({ path, start: i + 1, end, type: 'string' });
      i = end + 1;
      return;
    }
    const start = i;
    while (i < text.length && !' \t\r\n,]}'.includes(text[i])) i++;
    if (i === start) throw new Error('value');
    if (INTEGER.test(text.slice(start, i))) out.push({ path, start, end: i, type: 'number' });
  };
  try {
    value([], 0);
    ws();
    return i === text.length ? out : undefined;
  } catch {
    return undefined;
  }
}

/** The holder and key of `path` in `root` (the path's objects and arrays are there: it came from the text's scan). */
function slotOf(root: any, path: Path): Slot {
  let holder = root;
  for (let d = 0; d < path.length - 1; d++) holder = holder[path[d]];
  return { holder, key: path[path.length - 1] };
}

/**
 * The offset of the quote that closes a string literal whose inside starts at `from` (the first quote not escaped,
 * i.e. after an even run of backslashes), or -1 when it is not closed.
 */
function closingQuote(text: string, from: number): number {
  for (let end = text.indexOf('"', from); end >= 0; end = text.indexOf('"', end + 1)) {
    let b = end;
    while (b > from && text.charCodeAt(b - 1) === 92) b--;
    if ((end - b) % 2 === 0) return end;
  }
  return -1;
}
