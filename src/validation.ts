/**
 * Maps ajv errors (as openapi-backend reports them, instancePath like `/query/limit` or
 * `/requestBody/messages/0/role`) to HTTPValidationError items `{loc, msg, type}`.
 */
import type { ErrorObject } from 'ajv';
import type { ValidationDetail } from './errors.js';

const LOC_ROOT: Record<string, string> = { query: 'query', path: 'path', requestBody: 'body', headers: 'header', cookies: 'cookie' };

const TYPES: Record<string, string> = {
  required: 'missing', type: 'type_error', maximum: 'less_than_equal', minimum: 'greater_than_equal',
  exclusiveMaximum: 'less_than', exclusiveMinimum: 'greater_than', enum: 'enum', const: 'literal_error',
  minLength: 'string_too_short', maxLength: 'string_too_long', pattern: 'string_pattern_mismatch',
  format: 'format_error', minItems: 'too_short', maxItems: 'too_long', additionalProperties: 'extra_forbidden',
  minProperties: 'too_short', maxProperties: 'too_long', anyOf: 'union_error', oneOf: 'union_error', multipleOf: 'multiple_of',
};

function decodePointer(seg: string): string | number {
  const s = seg.replace(/~1/g, '/').replace(/~0/g, '~');
  return /^\d+$/.test(s) ? Number(s) : s;
}

export function toValidationDetails(errors: ErrorObject[] | null | undefined): ValidationDetail[] {
  const out: ValidationDetail[] = [];
  const seen = new Set<string>();
  const list = errors ?? [];
  // A union's own "must match a schema in anyOf" says little once its branches have spoken; keep it only alone.
  const concrete = list.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf');
  for (const e of concrete.length ? concrete : list) {
    const segs = e.instancePath.split('/').filter(Boolean).map(decodePointer);
    let loc: Array<string | number>;
    if (segs.length === 0) loc = ['body'];
    else loc = [LOC_ROOT[String(segs[0])] ?? String(segs[0]), ...segs.slice(1)];
    let msg = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      if (segs.length === 0 && missing === 'requestBody') loc = ['body'];
      else loc.push(missing);
      msg = 'Field required';
    } else if (e.keyword === 'additionalProperties') {
      const extra = (e.params as { additionalProperty: string }).additionalProperty;
      loc.push(extra);
      msg = loc[0] === 'query' ? 'Unknown query parameter' : 'Extra field not permitted';
    } else if (e.keyword === 'enum') {
      msg = `must be one of: ${((e.params as { allowedValues: unknown[] }).allowedValues ?? []).map(String).join(', ')}`;
    }
    const key = `${loc.join('\u0000')}|${e.keyword}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ loc, msg, type: TYPES[e.keyword] ?? e.keyword });
  }
  return out.length ? out : [{ loc: ['body'], msg: 'Invalid request', type: 'value_error' }];
}
