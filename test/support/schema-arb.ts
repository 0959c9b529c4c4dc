/**
 * Test values from the spec's own schemas: fast-check arbitraries of values a schema accepts (approximately:
 * formats and patterns best effort), values at and just past its bounds, hostile values of every other kind,
 * and one deterministic sample per schema (for walks that need one valid request per operation).
 */
import fc from 'fast-check';
import type { SpecDocument } from '../../src/spec.js';

export type Schema = Record<string, any>;

/** Hints for fields whose valid values the schema cannot know (a served model, an existing tool, …). */
export type Hints = Record<string, unknown[]>;

const MAX_DEPTH = 6;

export class SchemaTools {
  constructor(private readonly doc: SpecDocument, private readonly hints: Hints = {}) {}

  resolve(s: Schema | undefined): Schema {
    let cur = s ?? {};
    for (let i = 0; i < 20 && typeof cur.$ref === 'string'; i++) {
      const path = cur.$ref.replace(/^#\//, '').split('/');
      cur = path.reduce((n: any, k: string) => n?.[k], this.doc as any) ?? {};
    }
    if (Array.isArray(cur.allOf)) {
      const parts = cur.allOf.map((p: Schema) => this.resolve(p));
      const { allOf: _drop, ...rest } = cur;
      return parts.reduce((acc: Schema, p: Schema) => ({
        ...acc, ...p,
        properties: { ...acc.properties, ...p.properties },
        required: [...(acc.required ?? []), ...(p.required ?? [])],
      }), rest);
    }
    return cur;
  }

  private types(s: Schema): string[] {
    if (Array.isArray(s.type)) return s.type;
    if (typeof s.type === 'string') return [s.type];
    if (s.properties || s.additionalProperties !== undefined) return ['object'];
    if (s.items) return ['array'];
    return [];
  }

  /** Values the schema (probably) accepts. */
  valid(schema: Schema | undefined, depth = 0, name = ''): fc.Arbitrary<unknown> {
    const s = this.resolve(schema);
    const hinted = this.hints[name];
    const own = this.validOwn(s, depth);
    return hinted?.length ? fc.oneof(fc.constantFrom(...hinted), own) : own;
  }

  private validOwn(s: Schema, depth: number): fc.Arbitrary<unknown> {
    if ('const' in s) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
    const variants = s.oneOf ?? s.anyOf;
    if (Array.isArray(variants)) return fc.oneof(...variants.map((v: Schema) => this.valid(v, depth + 1)));
    const types = this.types(s);
    if (!types.length) return depth > MAX_DEPTH ? fc.constant('x') : fc.jsonValue({ maxDepth: 2 });
    return fc.oneof(...types.map((t) => this.ofType(s, t, depth)));
  }

  private ofType(s: Schema, t: string, depth: number): fc.Arbitrary<unknown> {
    switch (t) {
      case 'null': return fc.constant(null);
      case 'boolean': return fc.boolean();
      case 'integer': {
        const min = Math.max(s.minimum ?? -1_000_000, Number.MIN_SAFE_INTEGER);
        const max = Math.min(s.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER);
        return fc.integer({ min, max: Math.max(min, max) });
      }
      case 'number': {
        const min = s.minimum ?? -1e6;
        const max = s.maximum ?? 1e6;
        return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
      }
      case 'string': return this.str(s);
      case 'array': {
        const minLength = s.minItems ?? 0;
        if (depth > MAX_DEPTH) return fc.constant(Array.from({ length: minLength }, () => this.sample(s.items, () => 'x')));
        return fc.array(this.valid(s.items, depth + 1), { minLength, maxLength: Math.max(minLength, Math.min(s.maxItems ?? 3, 3)) });
      }
      case 'object': {
        const props: Record<string, Schema> = s.properties ?? {};
        const required: string[] = s.required ?? [];
        if (depth > MAX_DEPTH) return fc.constant(this.sample(s, () => 'x'));
        const record: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [k, v] of Object.entries(props)) record[k] = this.valid(v, depth + 1, k);
        if (!Object.keys(record).length) return fc.constant({});
        return fc.record(record, { requiredKeys: required.filter((k) => k in record) });
      }
      default: return fc.constant(null);
    }
  }

  private str(s: Schema): fc.Arbitrary<string> {
    if (s.format === 'date-time') return fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString());
    if (s.format === 'uri' || s.format === 'url') return fc.webUrl();
    if (typeof s.pattern === 'string') {
      try {
        return fc.stringMatching(new RegExp(s.pattern)).filter((x) => x.length >= (s.minLength ?? 0) && x.length <= (s.maxLength ?? Infinity));
      } catch { /* a pattern fast-check cannot generate from: plain strings */ }
    }
    const minLength = s.minLength ?? 0;
    return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(s.maxLength ?? 40, 40)) });
  }

  /** Values at and just past the schema's bounds (empty when it has none). */
  boundaries(schema: Schema | undefined): unknown[] {
    const s = this.resolve(schema);
    const out: unknown[] = [];
    for (const t of this.types(s)) {
      if (t === 'integer' || t === 'number') {
        if (typeof s.minimum === 'number') out.push(s.minimum, s.minimum - 1, s.minimum - 0.5);
        if (typeof s.maximum === 'number') out.push(s.maximum, s.maximum + 1, s.maximum + 0.5);
        out.push(Number.MAX_SAFE_INTEGER + 2, -1e308, 1e308);
      }
      if (t === 'string') {
        if (typeof s.maxLength === 'number') out.push('x'.repeat(s.maxLength), 'x'.repeat(s.maxLength + 1));
        if (typeof s.minLength === 'number' && s.minLength > 0) out.push('x'.repeat(s.minLength - 1));
      }
      if (t === 'array') {
        if (typeof s.maxItems === 'number') out.push(Array.from({ length: s.maxItems + 1 }, () => this.sample(s.items, () => 'x')));
        if (typeof s.minItems === 'number' && s.minItems > 0) out.push([]);
      }
    }
    return out;
  }

  /** One deterministic value the schema accepts; every free string is `fill(path)`. */
  sample(schema: Schema | undefined, fill: (path: string[]) => string, path: string[] = [], depth = 0): unknown {
    const s = this.resolve(schema);
    const hinted = this.hints[path.at(-1) ?? ''];
    if (hinted?.length) return hinted[0];
    if ('const' in s) return s.const;
    if (Array.isArray(s.enum)) return s.enum[0];
    if ('default' in s && s.default !== null && typeof s.default !== 'object') return s.default;
    const variants = s.oneOf ?? s.anyOf;
    if (Array.isArray(variants)) return this.sample(variants[0], fill, path, depth + 1);
    const types = this.types(s).filter((t) => t !== 'null');
    switch (types[0]) {
      case 'boolean': return false;
      case 'integer': case 'number': return Math.max(s.minimum ?? 1, Math.min(1, s.maximum ?? 1));
      case 'string': return fill(path);
      case 'array': return Array.from({ length: Math.max(1, s.minItems ?? 1) }, (_, i) => this.sample(s.items, fill, [...path, String(i)], depth + 1));
      case 'object': {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
          if (depth > MAX_DEPTH && !(s.required ?? []).includes(k)) continue;
          out[k] = this.sample(v, fill, [...path, k], depth + 1);
        }
        return out;
      }
      default: return types.length ? null : fill(path);
    }
  }
}

/** Hostile values of every kind: wrong types, edge numbers, odd and huge strings, prototype keys, nesting. */
export const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    null, true, false, 0, -1, -0, 0.5, 2 ** 53, -(2 ** 53), 1e308, -1e308, '', ' ', '0', '-1', 'null', 'true', 'NaN', 'Infinity',
    [], {}, [null], [[]], { __proto__: { polluted: 1 } }, JSON.parse('{"__proto__":{"polluted":1}}'), { constructor: { prototype: { polluted: 1 } } },
    '\u0000', '\ud800', '\udfff\ud800', '\u202e\u0000abc', '../../../../etc/passwd', '%00', '%ff', '<script>alert(1)</script>', "' OR 1=1 --",
    'x'.repeat(100_000), '😀'.repeat(20_000), nested(100), nested(200), nested(3000),
  ),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
  fc.double(),
  fc.jsonValue({ maxDepth: 4 }),
);

/** `[[[…]]]` `depth` deep (a value; as JSON text it is `depth` brackets). */
export function nested(depth: number): unknown {
  let v: unknown = [];
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/** Every path to a value inside `v` (objects and arrays), the root included. */
export function paths(v: unknown, prefix: Array<string | number> = [], out: Array<Array<string | number>> = [], depth = 0): Array<Array<string | number>> {
  out.push(prefix);
  if (depth > 12 || !v || typeof v !== 'object') return out;
  for (const [k, child] of Object.entries(v as object)) paths(child, [...prefix, Array.isArray(v) ? Number(k) : k], out, depth + 1);
  return out;
}

/** A copy of `v` with the value at `path` replaced (or, with `remove`, deleted). */
export function setAt(v: unknown, path: Array<string | number>, value: unknown, remove = false): unknown {
  if (!path.length) return value;
  const copy: any = Array.isArray(v) ? [...v] : { ...(v as object) };
  const [head, ...rest] = path;
  if (!rest.length) {
    if (remove) {
      if (Array.isArray(copy)) copy.splice(Number(head), 1);
      else delete copy[head];
    } else copy[head] = value;
    return copy;
  }
  copy[head] = setAt(copy[head], rest, value, remove);
  return copy;
}
