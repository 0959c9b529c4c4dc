/** How V8 stores strings, for tests of the gateway's one-byte strings (test/unit/spec-strings.test.ts). */
import v8 from 'node:v8';

/**
 * How V8 stores a string, as its serializer tags it (v8.serialize, the public way to see it): '"' one byte per
 * character, 'c' two (after the version header and any padding bytes).
 */
export function stored(s: string): 'one-byte' | 'two-byte' {
  const b = v8.serialize(s);
  let i = 2;
  while (b[i] === 0) i++;
  if (b[i] === 0x22) return 'one-byte';
  if (b[i] === 0x63) return 'two-byte';
  throw new Error(`unexpected serializer tag ${b[i]}`);
}

export const BEYOND_LATIN1 = /[^\x00-\xff]/;

/** Every key and string value in a parsed document. */
export function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) { out.push(k); strings(x, out); }
  return out;
}
