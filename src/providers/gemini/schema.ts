/**
 * JSON Schema (as OpenAI and Anthropic clients write it) -> Gemini's OpenAPI-subset Schema. Gemini rejects
 * keys it does not know (`$schema`, `additionalProperties`, `strict`, `$defs`, …), so the mapping keeps only
 * the fields Gemini's Schema has, inlines local `$ref`s, turns `["string","null"]` into `nullable`, `const`
 * into a one-value enum, `oneOf` into `anyOf`, and writes types in Gemini's upper case.
 */

/** The fields of Gemini's Schema object (https://ai.google.dev/api/caching#Schema). */
const KEEP = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required',
  'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering',
  'default', 'items', 'minimum', 'maximum',
]);

/** Recursive `$ref`s cannot be inlined forever; past this depth a reference becomes an open schema. */
const MAX_DEPTH = 24;

type Json = Record<string, any>;

export function toGeminiSchema(schema: Json): Json {
  return convert(schema, schema, 0);
}

function convert(node: unknown, root: Json, depth: number): Json {
  if (!node || typeof node !== 'object' || Array.isArray(node) || depth > MAX_DEPTH) return {};
  let s = node as Json;
  if (typeof s.$ref === 'string') {
    const target = resolveRef(s.$ref, root);
    const { $ref: _ref, ...rest } = s;
    s = { ...(target ?? {}), ...rest };
  }
  if (Array.isArray(s.allOf)) s = mergeAllOf(s, root);
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'properties' && v && typeof v === 'object') {
      const props = Object.fromEntries(Object.entries(v as Json).map(([name, sub]) => [name, convert(sub, root, depth + 1)]));
      if (Object.keys(props).length) out.properties = props;
    } else if (k === 'items') {
      out.items = convert(Array.isArray(v) ? v[0] : v, root, depth + 1);
    } else if ((k === 'anyOf' || k === 'oneOf') && Array.isArray(v)) {
      out.anyOf = v.map((sub) => convert(sub, root, depth + 1));
    } else if (k === 'const') {
      out.enum = [v];
    } else if (k !== 'type' && KEEP.has(k)) {
      out[k] = v;
    }
  }
  applyType(s.type, out);
  if (out.enum && !out.type) out.type = 'STRING';
  if (Array.isArray(out.required)) {
    // Gemini rejects a required name that has no property.
    const names = new Set(Object.keys(out.properties ?? {}));
    out.required = out.required.filter((r: unknown) => typeof r === 'string' && names.has(r));
    if (!out.required.length) delete out.required;
  }
  return out;
}

function applyType(type: unknown, out: Json): void {
  const types = (Array.isArray(type) ? type : type === undefined ? [] : [type]).map(String);
  const real = types.filter((t) => t !== 'null');
  if (real.length < types.length) out.nullable = true;
  if (real.length === 1) out.type = real[0]!.toUpperCase();
  else if (real.length > 1) out.anyOf = real.map((t) => ({ type: t.toUpperCase() }));
}

function resolveRef(ref: string, root: Json): Json | undefined {
  const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  const target = m ? root[m[1]!]?.[decodeURIComponent(m[2]!).replace(/~1/g, '/').replace(/~0/g, '~')] : ref === '#' ? root : undefined;
  return target && typeof target === 'object' ? (target as Json) : undefined;
}

/** allOf parts merged into one schema: properties and required united, other keys first-wins. */
function mergeAllOf(s: Json, root: Json): Json {
  const { allOf, ...rest } = s;
  const out: Json = { ...rest };
  for (const raw of allOf as unknown[]) {
    if (!raw || typeof raw !== 'object') continue;
    const part = typeof (raw as Json).$ref === 'string' ? (resolveRef((raw as Json).$ref, root) ?? {}) : (raw as Json);
    for (const [k, v] of Object.entries(part)) {
      if (k === 'properties') out.properties = { ...(out.properties ?? {}), ...(v as Json) };
      else if (k === 'required') out.required = [...new Set([...(out.required ?? []), ...(v as string[])])];
      else if (!(k in out)) out[k] = v;
    }
  }
  return out;
}
