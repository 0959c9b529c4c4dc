/**
 * Search augmentation: a web search turned into a text block to prepend to a user message, for models without
 * tool calling. Serves `POST /v1/tools/search/augment` and, through buildAugmentContext(), the chat engine's
 * `auto_web_search`. The layout of the block is fixed by the spec (operation searchAugment):
 *
 *   Web search results for "<query>":
 *   <blank>
 *   Summary: <answer>            ← only with include_answer and an answer, followed by a blank line
 *   <blank>
 *   1. <title>
 *      <snippet>
 *      Source: <url>
 *   <blank>
 *   2. …                         ← no trailing blank line
 *
 * Whitespace runs in the query, titles, snippets and answer (line breaks included) become one space, so every
 * entry stays exactly three lines.
 */
import type { ToolsConfig } from '../config.js';
import type { Logger } from '../logger.js';
import type { components } from '../../generated/api.js';
import { ApiError } from '../errors.js';
import { NEVER } from '../cancel.js';
import { UpstreamError } from '../engine/types.js';
import type { Principal } from '../auth.js';
import type { SearchHit, TavilyClient } from './web-search.js';

type AugmentRequestWire = components['schemas']['SearchAugmentRequest'];
/** The request with its defaulted fields optional (the engine passes only what it wants). */
export type AugmentRequest = Pick<AugmentRequestWire, 'query'> & Partial<Omit<AugmentRequestWire, 'query'>>;
export type AugmentResponse = components['schemas']['SearchAugmentResponse'];
export type AugmentSource = components['schemas']['SearchAugmentSource'];

/** Options of buildAugmentContext (the request's fields, all optional, plus an abort signal). */
export type AugmentOptions = Omit<AugmentRequest, 'query'> & { signal?: AbortSignal };

export const DEFAULTS = { max_results: 5, search_depth: 'basic', include_answer: true, max_snippet_length: 300 } as const;

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Cuts `s` to at most `max` characters (code points); a cut text ends with `...`, counted in the limit. */
export function trimSnippet(s: string, max: number): string {
  const chars = [...oneLine(s)];
  if (chars.length <= max) return chars.join('');
  return chars.slice(0, Math.max(0, max - 3)).join('').trimEnd() + '...';
}

export function formatContext(query: string, answer: string | null, sources: AugmentSource[]): string {
  const lines = [`Web search results for "${oneLine(query)}":`, ''];
  if (!sources.length) return [...lines, 'No results found.'].join('\n');
  if (answer) lines.push(`Summary: ${oneLine(answer)}`, '');
  sources.forEach((s, i) => {
    if (i > 0) lines.push('');
    lines.push(`${i + 1}. ${s.title}`, `   ${s.snippet}`, `   Source: ${s.url}`);
  });
  return lines.join('\n');
}

export function toSources(hits: SearchHit[], maxSnippet: number): AugmentSource[] {
  return hits.map((h) => ({ title: oneLine(h.title) || h.url, url: h.url, snippet: trimSnippet(h.content, maxSnippet) }));
}

/**
 * Fixed one-minute windows per key. 0 turns the limit off. Stale windows are swept when the map grows, so a
 * stream of distinct addresses cannot grow it without bound.
 */
export class FixedWindowLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly perWindow: number, private readonly windowMs = 60_000) {}

  /** null when allowed; otherwise the seconds until the window resets. */
  take(key: string, now = Date.now()): number | null {
    if (this.perWindow <= 0) return null;
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      if (this.windows.size >= 10_000) this.sweep(now);
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    if (w.count >= this.perWindow) return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
    w.count++;
    return null;
  }

  private sweep(now: number) {
    for (const [k, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(k);
  }
}

/** Counts one call of `key`: null when allowed, else the seconds to wait. In this process or shared (Redis). */
export interface CallWindow {
  take(key: string): number | null | Promise<number | null>;
}

export class SearchService {
  private readonly guests: CallWindow;
  private readonly keys: CallWindow;

  /** `windows`: shared counters (src/limits/shared-window.ts) when instances share Redis; else in this process. */
  constructor(private readonly client: TavilyClient, cfg: ToolsConfig, private readonly logger: Logger, windows?: { guests: CallWindow; keys: CallWindow }) {
    this.guests = windows?.guests ?? new FixedWindowLimiter(cfg.guestAugmentPerMinute);
    this.keys = windows?.keys ?? new FixedWindowLimiter(cfg.keyAugmentPerMinute);
  }

  /** Guests are limited per client address, keys per key; over the limit → 429 with Retry-After. */
  async checkRate(principal: Principal | null, clientAddress: string): Promise<void> {
    const wait = await (principal
      ? this.keys.take(principal.admin ? 'admin' : `key:${principal.keyId}`)
      : this.guests.take(`ip:${clientAddress}`));
    if (wait === null) return;
    const who = principal ? 'this key' : 'guests from this address';
    throw new ApiError(429, 'rate_limit_error', `Too many search-augment requests for ${who}; retry in ${wait} s.`, 'rate_limited', null,
      { 'Retry-After': String(wait) });
  }

  /**
   * Runs the search and builds the response. Upstream failures (and a missing configuration) are a 200 with
   * `success: false`; only bugs throw.
   */
  async augment(req: AugmentRequest, signal?: AbortSignal): Promise<AugmentResponse> {
    const r = {
      max_results: req.max_results ?? DEFAULTS.max_results, search_depth: req.search_depth ?? DEFAULTS.search_depth,
      include_answer: req.include_answer ?? DEFAULTS.include_answer, max_snippet_length: req.max_snippet_length ?? DEFAULTS.max_snippet_length,
    };
    const failed = (error: string): AugmentResponse => ({ success: false, query: req.query, context: '', results_count: 0, answer: null, sources: [], error });
    if (!this.client.configured) return failed('web search is not configured on this gateway (TAVILY_API_KEY)');
    try {
      const out = await this.client.search({
        query: req.query, maxResults: r.max_results, searchDepth: r.search_depth, includeAnswer: r.include_answer,
        includeDomains: req.include_domains, excludeDomains: req.exclude_domains,
      }, signal ?? NEVER);
      const sources = toSources(out.results, r.max_snippet_length);
      const answer = r.include_answer ? out.answer : null;
      return { success: true, query: req.query, context: formatContext(req.query, answer, sources), results_count: sources.length, answer, sources, error: null };
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      this.logger.warn({ kind: err.kind, status: err.status }, 'web search failed');
      return failed(`web search failed: ${err.message}`);
    }
  }

  /**
   * For the chat engine's `auto_web_search`: the context block and its source count. Never throws for an
   * upstream failure: the context is then empty and `error` says why, so the chat can go on without it.
   */
  buildAugmentContext = async (query: string, opts: AugmentOptions = {}): Promise<{ context: string; results_count: number; error?: string }> => {
    const { signal, ...rest } = opts;
    const res = await this.augment({ ...rest, query }, signal);
    return res.success ? { context: res.context, results_count: res.results_count } : { context: '', results_count: 0, error: res.error ?? 'web search failed' };
  };
}
