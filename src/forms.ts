/**
 * Form bodies (urlencoded, multipart) arrive as strings. Before validation each field is coerced by the type
 * its schema declares, so `temperature=0.2` validates as a number and `temperature=hot` still fails as one.
 */
import type { Operation } from 'openapi-backend';

const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data'];
const JSON_TYPE = 'application/json';

function coerceValue(value: unknown, schema: any): unknown {
  if (typeof value !== 'string' || !schema) return value;
  const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes('string')) return value;
  if ((types.includes('number') || types.includes('integer')) && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  if (types.includes('boolean') && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  if (types.includes('array')) return [value];
  if (types.includes('null') && value === '') return null;
  return value;
}

export function coerceFormBody(op: Operation, req: { headers: Record<string, unknown>; body?: unknown }): void {
  const raw = req.headers['content-type'];
  // JSON, the common case, at the cost of one comparison (a case-insensitive regular expression's test was ~1,400
  // instructions: docs/PERFORMANCE.md, session 54), else of one test
  if (raw === JSON_TYPE || typeof raw !== 'string' || !/form/i.test(raw)) return;
  const ct = raw.split(';')[0].trim().toLowerCase();
  if (!FORM_TYPES.includes(ct) || !req.body || typeof req.body !== 'object') return;
  const content = (op.requestBody as any)?.content?.[ct];
  const props = content?.schema?.properties;
  if (!props) return;
  const body = req.body as Record<string, unknown>;
  for (const [k, v] of Object.entries(body)) {
    body[k] = coerceValue(v, props[k]);
  }
}
