/**
 * Validates JSON bodies against OpenAI's own published spec (shared/reference/openai-openapi.yaml), so tests
 * can prove that what the gateway sends upstream (and what the simulator answers) is real OpenAI wire format.
 *
 * The spec says `openapi: 3.1.0` but still carries OpenAPI 3.0 idioms, which are converted before ajv sees
 * them: `nullable: true` (adds "null" to the type / enum, or wraps the schema in anyOf with null) and boolean
 * `exclusiveMinimum`/`exclusiveMaximum`. Vendor keywords (`x-…`), `discriminator` and `example` are dropped.
 * The internal `#/components/schemas/…` refs are resolved by ajv inside one registered document, which keeps
 * recursive schemas finite. The YAML is parsed once, and each schema compiled once, on first use.
 *
 * The spec's location: $OPENAI_OPENAPI_SPEC, else ../shared/reference/openai-openapi.yaml beside the repo.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import YAML from 'yaml';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const DOC_ID = 'https://openai.local/openapi.json';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function openaiSpecPath(): string {
  return process.env.OPENAI_OPENAPI_SPEC || path.resolve(root, '../shared/reference/openai-openapi.yaml');
}

/** Keys whose values are data, not schemas: copied as they are. */
const DATA_KEYS = new Set(['enum', 'const', 'default', 'examples', 'required']);
/** Keys whose values map names to schemas (the names themselves are never keywords). */
const MAP_KEYS = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas']);

/** OpenAPI 3.0 idioms to JSON Schema 2020-12; records every `format` it meets. */
function convert(node: unknown, formats: Set<string>): unknown {
  if (Array.isArray(node)) return node.map((n) => convert(n, formats));
  if (!node || typeof node !== 'object') return node;
  const src = node as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(src)) {
    if (k === 'nullable' || k === 'discriminator' || k === 'example' || k.startsWith('x-')) continue;
    if (DATA_KEYS.has(k)) out[k] = v;
    else if (MAP_KEYS.has(k) && v && typeof v === 'object') {
      out[k] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, convert(s, formats)]));
    } else out[k] = convert(v, formats);
  }
  if (typeof out.format === 'string') formats.add(out.format);
  for (const [flag, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']] as const) {
    if (typeof out[flag] === 'boolean') {
      if (out[flag] && typeof out[bound] === 'number') {
        out[flag] = out[bound];
        delete out[bound];
      } else delete out[flag];
    }
  }
  if (src.nullable !== true) return out;
  if (typeof out.type === 'string' || Array.isArray(out.type)) {
    const types = ([] as unknown[]).concat(out.type);
    out.type = types.includes('null') ? types : [...types, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    return out;
  }
  return { anyOf: [out, { type: 'null' }] };
}

interface Compiled {
  ajv: Ajv2020;
  schemaNames: Set<string>;
}

let compiled: Compiled | undefined;
const validators = new Map<string, ValidateFunction>();

function load(): Compiled {
  if (compiled) return compiled;
  const file = openaiSpecPath();
  if (!fs.existsSync(file)) throw new Error(`OpenAI spec not found at ${file} (set OPENAI_OPENAPI_SPEC)`);
  const doc = YAML.parse(fs.readFileSync(file, 'utf8'), { maxAliasCount: -1 });
  const formats = new Set<string>();
  const schemas = convert(doc.components.schemas, formats) as Record<string, unknown>;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, logger: false });
  addFormats(ajv);
  // Formats ajv-formats does not know (unixtime, binary, double, int64, …) carry no constraint worth checking.
  for (const f of formats) if (!ajv.formats[f]) ajv.addFormat(f, true);
  ajv.addSchema({ $id: DOC_ID, components: { schemas } });
  compiled = { ajv, schemaNames: new Set(Object.keys(schemas)) };
  return compiled;
}

export interface SchemaCheck {
  ok: boolean;
  /** `<json pointer> <message>` lines; empty when ok. */
  errors: string[];
}

/** Validates `value` against `#/components/schemas/<schemaName>` of OpenAI's spec. */
export function validateOpenAI(schemaName: string, value: unknown): SchemaCheck {
  let validate = validators.get(schemaName);
  if (!validate) {
    const { ajv, schemaNames } = load();
    if (!schemaNames.has(schemaName)) throw new Error(`no schema ${schemaName} in the OpenAI spec`);
    validate = ajv.compile({ $ref: `${DOC_ID}#/components/schemas/${schemaName}` });
    validators.set(schemaName, validate);
  }
  const ok = validate(value) as boolean;
  const errors = ok ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`);
  return { ok, errors };
}

/** A request body as OpenAI's `CreateChatCompletionRequest` defines it. */
export function validateChatCompletionRequest(body: unknown): SchemaCheck {
  return validateOpenAI('CreateChatCompletionRequest', body);
}

/** Throws with the validation errors when `value` does not match (handy inside tests). */
export function assertOpenAI(schemaName: string, value: unknown): void {
  const r = validateOpenAI(schemaName, value);
  if (!r.ok) throw new Error(`not a valid OpenAI ${schemaName}:\n  ${r.errors.slice(0, 10).join('\n  ')}`);
}
