/** The contract, loaded once: spec/openapi.yaml parsed to an object (and its JSON text for /openapi.json). */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './paths.js';
import { parse } from 'yaml';

export const SPEC_PATH = path.join(ROOT, 'spec/openapi.yaml');

export interface SpecDocument {
  openapi: string;
  info: { version: string; [k: string]: unknown };
  paths: Record<string, Record<string, any>>;
  components?: Record<string, any>;
  [k: string]: unknown;
}

let cached: { doc: SpecDocument; yaml: string } | undefined;

export function loadSpec(): { doc: SpecDocument; yaml: string } {
  if (!cached) {
    const yaml = fs.readFileSync(SPEC_PATH, 'utf8');
    cached = { doc: oneByte(parse(yaml, { mapAsMap: true })) as SpecDocument, yaml };
  }
  return cached;
}

const BEYOND_LATIN1 = /[^\x00-\xff]/;

/**
 * The parsed document with its maps as plain objects and every string that fits one byte per character stored that
 * way. The spec's text holds characters beyond Latin-1 (dashes, arrows), so V8 keeps all of it two bytes per
 * character, and so is every piece the YAML parser slices from it, ASCII or not. A key made a property name from
 * such a piece is interned two-byte, and the interned string is what every later use of the name gets, the code's
 * own literals included: `finish_reason`, `total_tokens`, `gateway_usage`, … were two-byte in every stream chunk
 * and response the gateway serialised, and one two-byte piece makes the whole `JSON.stringify` result and every
 * frame joined with it two-byte (twice the bytes, flattened and encoded on V8's slow path when written). So the
 * parser gives Maps (their keys not interned) and their keys and strings are copied into one-byte strings before
 * anything interns them. (`JSON.parse` does this itself; the `yaml` package does not.)
 */
export function oneByte(v: unknown): unknown {
  if (typeof v === 'string') return BEYOND_LATIN1.test(v) ? v : Buffer.from(v, 'latin1').toString('latin1');
  if (Array.isArray(v)) return v.map(oneByte);
  if (v instanceof Map) {
    const o: Record<string, unknown> = {};
    for (const [k, x] of v) {
      const key = oneByte(String(k)) as string;
      // as the yaml package's own plain objects: a `__proto__` key is a property, not the prototype
      if (key === '__proto__') Object.defineProperty(o, key, { value: oneByte(x), writable: true, enumerable: true, configurable: true });
      else o[key] = oneByte(x);
    }
    return o;
  }
  return v;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

/** Every operationId in the spec, in document order. */
export function operationIds(doc: SpecDocument): string[] {
  const ids: string[] = [];
  for (const item of Object.values(doc.paths)) {
    for (const m of METHODS) if (item[m]?.operationId) ids.push(item[m].operationId);
  }
  return ids;
}
