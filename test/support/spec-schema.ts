/**
 * Validates a value against one schema of spec/openapi.yaml's components. Response validation in the app
 * covers JSON replies only; SSE payloads (chunks, Anthropic events) are checked here, by the tests that read them.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { loadSpec } from '../../src/spec.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction>();

export function specSchemaErrors(schemaName: string, value: unknown): string[] {
  if (!ajv) {
    ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(ajv);
    ajv.addSchema({ $id: 'spec', components: loadSpec().doc.components }, 'spec');
  }
  let validate = compiled.get(schemaName);
  if (!validate) {
    validate = ajv.compile({ $ref: `spec#/components/schemas/${schemaName}` });
    compiled.set(schemaName, validate);
  }
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}
