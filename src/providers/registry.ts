/**
 * One line per gateway: the gateway id (as in seeds/gateways.json) is the key, the value its adapter.
 * OpenAI-compatible gateways are data over one base; only what differs is declared. Native formats
 * (Anthropic Messages, Gemini generateContent) have a folder each under src/providers/.
 */
import type { ProviderAdapter } from './types.js';
import { openaiCompatible } from './openai/index.js';
import { anthropicAdapter } from './anthropic/index.js';
import { geminiAdapter } from './gemini/index.js';

export const providers: Record<string, ProviderAdapter> = {
  openai: openaiCompatible({ maxTokensField: 'max_completion_tokens' }),
  anthropic: anthropicAdapter,
  google: geminiAdapter,
  openrouter: openaiCompatible({ headers: { 'X-Title': 'Model Gateway' } }),
  groq: openaiCompatible({ exclude: ['logprobs', 'top_logprobs', 'logit_bias'] }),
  together: openaiCompatible(),
  fireworks: openaiCompatible(),
  deepinfra: openaiCompatible(),
  cerebras: openaiCompatible({ exclude: ['frequency_penalty', 'presence_penalty', 'logit_bias'] }),
  xai: openaiCompatible(),
  novita: openaiCompatible(),
  nebius: openaiCompatible(),
  featherless: openaiCompatible(),
  chutes: openaiCompatible(),
  huggingface: openaiCompatible(),
  local: openaiCompatible(),
};
