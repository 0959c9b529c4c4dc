/**
 * Provider adapters by wire format: the one place an upstream's format picks its adapter. Adding a native
 * format is a folder under src/providers/ and one line here.
 */
import type { WireFormat } from '../catalog/types.js';
import type { ProviderAdapter } from './types.js';
import { anthropicAdapter } from './anthropic/index.js';
import { geminiAdapter } from './gemini/index.js';

export const adapters: Record<WireFormat, ProviderAdapter | undefined> = {
  anthropic: anthropicAdapter,
  gemini: geminiAdapter,
  openai: undefined /* integrator adds */,
};
