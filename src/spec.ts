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
    cached = { doc: parse(yaml) as SpecDocument, yaml };
  }
  return cached;
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
