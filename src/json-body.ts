/**
 * Upstream JSON bodies that carry large strings (a base64 image, a long document) without serialising and encoding
 * them again.
 *
 * The gateway rebuilds every upstream body from the parsed request, so a 2 MB data URL was copied by
 * `JSON.stringify` into a 2 MB JSON string (a rope V8 then flattens) and that string encoded to 2 MB of UTF-8:
 * ~5 ms of a 2 MB vision request's ~11 ms of CPU (docs/PERFORMANCE.md, session 26). A string needs neither step when
 * it is "plain": printable ASCII without a quote or a backslash. Its JSON literal is then `"` + its characters + `"`,
 * and its characters are its bytes. One pattern tells (~0.5 ns a character, ~1 ms for 2 MB); a client body that is
 * all ASCII and holds no backslash proves it for every string in it at once (JSON forbids raw control characters in
 * strings, and a quote or a backslash inside one needs a backslash), which Node checks in ~0.02 ms for 2 MB
 * (`isAscii`, and `indexOf` of one byte).
 *
 * So the lean path registers each client body that holds a string of PLAIN_MIN characters or more while its request
 * is in flight (`registerLargeBody`, released when the request ends; a 100 KB conversation of short messages is not
 * registered, so its upstream body is not walked), with its large strings when the body proves them plain;
 * and while any is in flight `jsonBody` looks for strings of PLAIN_MIN characters and more in an upstream body,
 * swaps each plain one (registered, or found so by the pattern) for a placeholder, serialises the rest, then writes
 * the JSON around them and their bytes into one Buffer. A registered string is recognised by its content (a Map's
 * key), so an adapter's slice with the same content counts too; anything unexpected (a placeholder not found exactly
 * once, a property that cannot be set) falls back to `JSON.stringify`, whose bytes these are in every case.
 */
import { Buffer, isAscii } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { parseDataUrl } from './providers/shared.js';

/** Strings shorter than this are serialised as they are: the gain is in the large ones. */
export const PLAIN_MIN = 64 * 1024;

/** Registered strings, counted: two requests in flight may carry the same image. */
const plain = new Map<string, number>();
/** Client bodies of PLAIN_MIN bytes and more in flight: while there are none, jsonBody is JSON.stringify. */
let largeBodies = 0;
/** A character that is not plain: outside printable ASCII, or a quote, or a backslash. */
const NOT_PLAIN = /[^\x20\x21\x23-\x5b\x5d-\x7e]/;

/** Unguessable per process, so no client text can pose as a placeholder (and one found twice falls back anyway). */
const PLACEHOLDER = `gw-splice-${randomBytes(12).toString('hex')}-`;

/**
 * After a client's JSON body was parsed, with its strings of PLAIN_MIN characters and more (`large`, noted by the
 * lean path's nesting walk): a body holding any is counted in flight, and when its bytes are all ASCII without a
 * backslash those strings (and the base64 part of such a data URL, as the adapters send it) are registered as plain,
 * until the returned function is called. Undefined for a body without a large string.
 */
export function registerLargeBody(bytes: Buffer, large: readonly string[]): (() => void) | undefined {
  if (large.length === 0) return undefined;
  const found: string[] = [];
  if (isAscii(bytes) && bytes.indexOf(0x5c) === -1) {
    for (const s of large) {
      found.push(s);
      const data = parseDataUrl(s)?.data;
      if (data !== undefined && data.length >= PLAIN_MIN) found.push(data);
    }
  }
  largeBodies++;
  for (const s of found) plain.set(s, (plain.get(s) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    largeBodies--;
    for (const s of found) {
      const n = (plain.get(s) ?? 1) - 1;
      if (n <= 0) plain.delete(s);
      else plain.set(s, n);
    }
  };
}

/** How many strings are registered, and how many large bodies are in flight (tests). */
export const registeredPlainStrings = (): number => plain.size;
export const largeBodiesInFlight = (): number => largeBodies;

/** Upstream bodies written with plain strings straight in, since the process started (tests). */
export const splicedBodies = { count: 0 };

type Holder = Record<string, unknown> | unknown[];

const isPlain = (s: string): boolean => plain.has(s) || !NOT_PLAIN.test(s);

function find(value: unknown, spots: Array<[Holder, string | number, string]>, depth: number): void {
  if (depth > 64 || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (typeof v === 'string') {
        if (v.length >= PLAIN_MIN && isPlain(v)) spots.push([value, i, v]);
      } else if (typeof v === 'object' && v !== null) find(v, spots, depth + 1);
    }
  } else {
    // own keys, in JSON.stringify's order
    for (const k of Object.keys(value)) {
      const v = (value as Record<string, unknown>)[k];
      if (typeof v === 'string') {
        if (v.length >= PLAIN_MIN && isPlain(v)) spots.push([value as Record<string, unknown>, k, v]);
      } else if (typeof v === 'object' && v !== null) find(v, spots, depth + 1);
    }
  }
}

/**
 * `JSON.stringify(value)` as an upstream request body: the string itself, or, when the value holds large plain
 * strings, the same JSON's UTF-8 bytes with those strings' bytes written straight in.
 */
export function jsonBody(value: unknown): string | Buffer {
  if (largeBodies === 0) return JSON.stringify(value);
  const spots: Array<[Holder, string | number, string]> = [];
  find(value, spots, 0);
  if (spots.length === 0) return JSON.stringify(value);
  let json: string;
  let swapped = 0;
  try {
    for (; swapped < spots.length; swapped++) {
      const [holder, key] = spots[swapped];
      (holder as Record<string | number, unknown>)[key] = PLACEHOLDER + swapped;
    }
    json = JSON.stringify(value);
  } catch {
    json = '';
  } finally {
    for (let i = 0; i < swapped; i++) {
      const [holder, key, s] = spots[i];
      (holder as Record<string | number, unknown>)[key] = s;
    }
  }
  if (swapped < spots.length || json === '') return JSON.stringify(value);
  // The JSON between the placeholders, in order; each placeholder's literal must be where the walk found it, once.
  const parts: string[] = [];
  let at = 0;
  for (let i = 0; i < spots.length; i++) {
    const literal = `"${PLACEHOLDER}${i}"`;
    const j = json.indexOf(literal, at);
    if (j < 0 || json.indexOf(literal, j + literal.length) >= 0) return JSON.stringify(value);
    parts.push(json.slice(at, j));
    at = j + literal.length;
  }
  parts.push(json.slice(at));
  let size = 0;
  for (const p of parts) size += Buffer.byteLength(p);
  for (const [, , s] of spots) size += s.length + 2;
  const out = Buffer.allocUnsafeSlow(size);
  let off = 0;
  for (let i = 0; i < spots.length; i++) {
    off += out.write(parts[i], off, 'utf8');
    out[off++] = 0x22;
    off += out.write(spots[i][2], off, 'latin1');
    out[off++] = 0x22;
  }
  off += out.write(parts[parts.length - 1], off, 'utf8');
  if (off !== size) return JSON.stringify(value);
  splicedBodies.count++;
  return out;
}
