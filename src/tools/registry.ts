/**
 * The built-in tools: one object per tool (name, JSON-schema parameters, price, run), registered in one list.
 * Adding a tool is a new module exporting a BuiltinTool and one line in buildToolRegistry().
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { components } from '../../generated/api.js';
import { ValidationFailure } from '../errors.js';
import { toValidationDetails } from '../validation.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export type ToolInfo = components['schemas']['ToolInfo'];
export type ToolDefinition = components['schemas']['BuiltinToolDefinition'];
export type ToolDetail = components['schemas']['ToolDetailResponse'];

export interface ToolRunContext {
  /** Aborts the upstream call when the client goes away (the timeout is the upstream client's own). */
  signal: AbortSignal;
}

export interface BuiltinTool<P = any> {
  name: string;
  description: string;
  category: string;
  /** JSON Schema (object) of the parameters; also what models see in the chat `tools` array. */
  parameters: Record<string, unknown>;
  billed: boolean;
  version: string;
  /** The external service called (`tavily`, `openai`), null when the tool runs locally. */
  upstream: string | null;
  /** Why the tool cannot run on this gateway (its upstream is not configured), or null when it can. */
  unavailable(): string | null;
  /** The charge in nano-USD for one successful run with these (validated) parameters. */
  priceNano(params: P): number;
  /** Runs the tool. Upstream failures throw UpstreamError (a failed execution); anything else is a bug (500). */
  run(params: P, ctx: ToolRunContext): Promise<Record<string, unknown>>;
}

export class ToolRegistry {
  private readonly tools: BuiltinTool[];
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(tools: BuiltinTool[]) {
    this.tools = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    // useDefaults fills the schema defaults into the validated copy, so tools see complete parameters.
    const ajv = addFormats(new Ajv2020({ allErrors: true, useDefaults: true, strict: false }));
    for (const t of this.tools) this.validators.set(t.name, ajv.compile(t.parameters));
  }

  all(): BuiltinTool[] {
    return this.tools;
  }

  get(name: string): BuiltinTool | undefined {
    return this.tools.find((t) => t.name === name);
  }

  /**
   * Validates `params` against the tool's schema; returns a copy with defaults filled in, or throws a 422 whose
   * `loc` is `["body", "parameters", <field>…]`.
   */
  validate(tool: BuiltinTool, params: unknown): Record<string, unknown> {
    const copy = structuredClone(params ?? {});
    const check = this.validators.get(tool.name)!;
    if (check(copy)) return copy as Record<string, unknown>;
    const errors = (check.errors ?? []).map((e: ErrorObject) => ({ ...e, instancePath: `/requestBody/parameters${e.instancePath}` }));
    throw new ValidationFailure(toValidationDetails(errors));
  }
}

export function toolInfo(t: BuiltinTool): ToolInfo {
  return {
    name: t.name, description: t.description, category: t.category, parameters: t.parameters as ToolInfo['parameters'],
    requires_auth: true, billed: t.billed, version: t.version,
  };
}

/** The tool as an item of a chat-completion request's `tools` array. */
export function toolDefinition(t: BuiltinTool): ToolDefinition {
  return { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters as ToolInfo['parameters'] } };
}

export function toolDetail(t: BuiltinTool): ToolDetail {
  return {
    name: t.name, description: t.description, category: t.category, parameters: t.parameters as ToolInfo['parameters'],
    definition: toolDefinition(t),
    metadata: { version: t.version, requires_auth: true, billed: t.billed, upstream: t.upstream },
  };
}
