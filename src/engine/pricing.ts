/**
 * Cost in nano-USD (1e-9 USD). Catalog prices are USD per token; cached prompt tokens are priced at the
 * cache-read rate where the catalog has one (else at the prompt rate), cache writes at the cache-write rate.
 * An unknown price counts as zero: such offers are free to the caller rather than billed by guess.
 */
import type { Offer } from '../catalog/types.js';
import type { ChatRequest, Usage } from './types.js';

export interface Cost {
  totalNano: number;
  inputNano: number;
  outputNano: number;
}

export function costOf(offer: Offer, usage: Usage, markup: number): Cost {
  const p = offer.pricing;
  const prompt = p.prompt ?? 0;
  const cached = Math.min(usage.cachedTokens, usage.promptTokens);
  const written = Math.min(usage.cacheWriteTokens, usage.promptTokens - cached);
  const plain = usage.promptTokens - cached - written;
  const inputUsd = plain * prompt + cached * (p.cacheRead ?? prompt) + written * (p.cacheWrite ?? prompt);
  const outputUsd = usage.completionTokens * (p.completion ?? 0);
  const inputNano = Math.round(inputUsd * markup * 1e9);
  const outputNano = Math.round(outputUsd * markup * 1e9);
  return { totalNano: inputNano + outputNano, inputNano, outputNano };
}

/** A deliberately high token estimate for text (about 3 characters per token plus per-message overhead). */
export function estimatePromptTokens(req: ChatRequest): number {
  let chars = 0;
  let images = 0;
  for (const m of req.messages) {
    chars += 16;
    if (typeof m.content === 'string') chars += m.content.length;
    else if (Array.isArray(m.content)) for (const p of m.content) p.type === 'text' ? (chars += p.text.length) : images++;
    for (const t of m.toolCalls ?? []) chars += t.name.length + t.arguments.length;
  }
  for (const t of req.tools ?? []) chars += JSON.stringify(t).length;
  return Math.ceil(chars / 3) + images * 1500;
}

export const DEFAULT_MAX_OUTPUT = 4096;

/**
 * The most a request can cost on this offer: the prompt estimate plus every completion token it may produce.
 * `promptTokens`: the request's estimate when the caller made it once for several offers (it walks every message and
 * serialises every tool).
 */
export function worstCaseNano(offer: Offer, req: ChatRequest, markup: number, promptTokens = estimatePromptTokens(req)): number {
  const maxOut = req.maxTokens ?? offer.maxOutputTokens ?? DEFAULT_MAX_OUTPUT;
  const n = req.n ?? 1;
  const usage: Usage = { promptTokens, completionTokens: maxOut * n, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
  return costOf(offer, usage, markup).totalNano;
}

/** Rough token count of generated text when an upstream reports no usage. */
export const estimateTextTokens = (text: string): number => (text ? Math.max(1, Math.ceil(text.length / 4)) : 0);
