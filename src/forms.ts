/**
 * Form bodies (urlencoded, multipart) arrive as strings. Before validation each field is coerced by the type
 * its schema declares, so `temperature=0.2` validates as a number and `temperature=hot` still fails as one.
 */
import type { Operation } from 'openapi-backend';

const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data'];

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
  if (typeof raw !== 'string' || !/form/i.test(raw)) return; // JSON, the common case, at the cost of one test
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
