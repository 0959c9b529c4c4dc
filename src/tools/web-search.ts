/**
 * Web search over a Tavily-compatible API: `POST {TAVILY_BASE_URL}/search` with `Authorization: Bearer <key>`
 * and the body `{query, search_depth, max_results, include_answer, include_raw_content, include_images,
 * include_domains, exclude_domains, topic}`; the answer is `{query, answer?, results: [{title, url, content,
 * score, raw_content?}], response_time}` (response_time is a number or, in some answers, a numeric string).
 * Used by the `web_search` tool and by search augmentation.
 */
import type { ToolsConfig } from '../config.js';
import { UpstreamError } from '../engine/types.js';
import { readJson, send } from '../providers/http.js';
import { usdToNano } from '../store/credits.js';
import type { BuiltinTool } from './registry.js';

export interface SearchOptions {
  query: string;
  maxResults: number;
  searchDepth: 'basic' | 'advanced';
  includeAnswer: boolean;
  includeDomains?: string[];
  excludeDomains?: string[];
}

export interface SearchHit {
  title: string;
  url: string;
  content: string;
  score: number | null;
}

export interface SearchOutcome {
  query: string;
  answer: string | null;
  results: SearchHit[];
  responseTimeS: number | null;
}

export class TavilyClient {
  constructor(private readonly cfg: ToolsConfig, private readonly connectMs: number) {}

  get configured(): boolean {
    return !!this.cfg.tavilyApiKey;
  }

  async search(o: SearchOptions, signal: AbortSignal): Promise<SearchOutcome> {
    if (!this.cfg.tavilyApiKey) throw new UpstreamError('auth', 'web search is not configured on this gateway (TAVILY_API_KEY)');
    const body = {
      query: o.query, search_depth: o.searchDepth, max_results: o.maxResults, include_answer: o.includeAnswer,
      include_raw_content: false, include_images: false, topic: 'general',
      include_domains: o.includeDomains ?? [], exclude_domains: o.excludeDomains ?? [],
    };
    const t = this.cfg.timeoutMs;
    const res = await send(`${this.cfg.tavilyBaseUrl}/search`, {
      method: 'POST', signal, body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${this.cfg.tavilyApiKey}` },
      timeouts: { connectMs: Math.min(this.connectMs, t), firstByteMs: t, totalMs: t },
    });
    const j = await readJson(res.body);
    if (!j || typeof j !== 'object' || !Array.isArray(j.results)) {
      throw new UpstreamError('invalid_response', 'the search service answered without a results list');
    }
    const results: SearchHit[] = j.results
      .filter((r: any) => r && typeof r.url === 'string' && r.url)
      .slice(0, o.maxResults)
      .map((r: any) => ({
        title: typeof r.title === 'string' ? r.title : '',
        url: r.url,
        content: typeof r.content === 'string' ? r.content : '',
        score: typeof r.score === 'number' && Number.isFinite(r.score) ? r.score : null,
      }));
    const rt = Number(j.response_time);
    return {
      query: typeof j.query === 'string' ? j.query : o.query,
      answer: o.includeAnswer && typeof j.answer === 'string' && j.answer.trim() ? j.answer.trim() : null,
      results,
      responseTimeS: j.response_time !== undefined && j.response_time !== null && Number.isFinite(rt) ? rt : null,
    };
  }
}

interface WebSearchParams {
  query: string;
  max_results: number;
  search_depth: 'basic' | 'advanced';
  include_answer: boolean;
  include_domains?: string[];
  exclude_domains?: string[];
}

const domainList = (what: string) => ({
  type: 'array', maxItems: 50, description: what,
  items: { type: 'string', minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.-]+$' },
});

export function webSearchTool(client: TavilyClient, cfg: ToolsConfig): BuiltinTool<WebSearchParams> {
  return {
    name: 'web_search',
    description: 'Search the web for current information. Returns the most relevant pages (title, URL, content excerpt, '
      + 'relevance score) and, when asked, a short generated answer.',
    category: 'search',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 400, description: 'The search query.' },
        max_results: { type: 'integer', minimum: 1, maximum: 10, default: 5, description: 'Maximum number of results.' },
        search_depth: { type: 'string', enum: ['basic', 'advanced'], default: 'basic', description: '`advanced` is slower and more thorough.' },
        include_answer: { type: 'boolean', default: true, description: 'Also return a short generated answer.' },
        include_domains: domainList('Only return results from these domains.'),
        exclude_domains: domainList('Never return results from these domains.'),
      },
      required: ['query'],
      additionalProperties: false,
    },
    billed: true,
    version: '1.0.0',
    upstream: 'tavily',
    unavailable: () => (client.configured ? null : 'web search is not configured on this gateway (TAVILY_API_KEY)'),
    priceNano: () => usdToNano(cfg.priceWebSearchUsd),
    async run(p, ctx) {
      const out = await client.search({
        query: p.query, maxResults: p.max_results, searchDepth: p.search_depth, includeAnswer: p.include_answer,
        includeDomains: p.include_domains, excludeDomains: p.exclude_domains,
      }, ctx.signal);
      return { query: out.query, answer: out.answer, results: out.results, results_count: out.results.length, response_time_s: out.responseTimeS };
    },
  };
}
