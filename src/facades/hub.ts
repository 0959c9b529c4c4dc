/**
 * Model-hub facade over the public Hugging Face Hub API (HUB_BASE_URL, optional HUB_TOKEN):
 *
 * - lists:   GET /api/models?pipeline_tag=&search=&author=&sort=likes|downloads&direction=-1&limit=&full=true
 *            (an array; further pages by the `Link: <…>; rel="next"` header — the hub has no offset, so an offset
 *            is served by reading `offset + limit` models from the start, at most MAX_WINDOW deep)
 * - details: GET /api/models/{owner}/{name}       (id, author, sha, cardData, siblings, safetensors, config, …)
 * - card:    GET /{owner}/{name}/raw/main/README.md
 * - files:   GET /api/models/{owner}/{name}/tree/main?recursive=true  ([{type, path, size, oid, lfs?}], paged by Link)
 *
 * Safety: ids are checked against the same pattern as the spec's path parameter, and every path segment is
 * encodeURIComponent-ed, so no id can reach another path; paging links and redirects are followed only on the
 * hub's own origin. A missing repository answers 401 "Repository not found" without a token (404 with one):
 * both become 404. Upstream timeout → 504, anything else → 502; answers are cached for HUB_CACHE_TTL_MS.
 */
import type { HubConfig } from '../config.js';
import type { Logger } from '../logger.js';
import type { components } from '../../generated/api.js';
import { ApiError, ValidationFailure, notFound } from '../errors.js';
import { UpstreamError } from '../engine/types.js';
import { readCapped, send } from '../providers/http.js';
import { NEVER } from '../cancel.js';
import { TtlCache, facadeError } from './common.js';

type S = components['schemas'];
export type HubModel = S['HubModel'];
export type HubModelList = S['HubModelListResponse'];
export type HubModelDetails = S['HubModelDetails'];

export const HUB_MODEL_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/;
export const HUB_AUTHOR_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** The hub pages by cursor; an offset is served by reading from the start, at most this many models deep. */
export const MAX_WINDOW = 10_000;
const PAGE = 1_000;
const MAX_TREE_PAGES = 50;
const MAX_REDIRECTS = 3;

interface Fetched {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  url: string;
}

const header = (h: Fetched['headers'], name: string) => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

export class HubFacade {
  private readonly cache: TtlCache<unknown>;
  private readonly origin: string;

  constructor(private readonly cfg: HubConfig, private readonly connectMs: number, private readonly logger: Logger) {
    this.cache = new TtlCache(cfg.cacheTtlMs, cfg.cacheMaxEntries);
    this.origin = new URL(cfg.baseUrl).origin;
  }

  discovery(q: { task: string | null; sort: 'likes' | 'downloads'; limit: number; offset: number }): Promise<HubModelList> {
    const params = new URLSearchParams();
    if (q.task) params.set('pipeline_tag', q.task);
    return this.listPage(params, q.sort, q.limit, q.offset, q.task);
  }

  search(q: { q: string; task: string | null; limit: number; offset: number }): Promise<HubModelList> {
    const params = new URLSearchParams({ search: q.q });
    if (q.task) params.set('pipeline_tag', q.task);
    return this.listPage(params, 'downloads', q.limit, q.offset, q.task);
  }

  authorModels(author: string, limit: number): Promise<HubModelList> {
    if (!HUB_AUTHOR_RE.test(author) || author.length > 256) {
      throw new ValidationFailure([{ loc: ['path', 'author'], msg: 'must be a hub user or organisation name', type: 'string_pattern_mismatch' }]);
    }
    return this.listPage(new URLSearchParams({ author }), 'downloads', limit, 0, null);
  }

  async details(id: string): Promise<HubModelDetails> {
    const path = `/api/models/${segments(id)}`;
    return this.cached(['details', id], async () => {
      const res = await this.fetch(path, id);
      return toDetails(parseJson(res.text), id);
    });
  }

  async card(id: string): Promise<S['HubModelCard']> {
    const path = `/${segments(id)}/raw/main/README.md`;
    return this.cached(['card', id], async () => {
      const res = await this.fetch(path, id, 'model card');
      return { model_id: id, card_markdown: res.text, length: [...res.text].length };
    });
  }

  async files(id: string): Promise<S['HubModelFileList']> {
    const path = `/api/models/${segments(id)}/tree/main?recursive=true`;
    return this.cached(['files', id], async () => {
      const entries = await this.paged(path, MAX_TREE_PAGES * PAGE, id);
      const files = entries.filter((e) => e && e.type === 'file' && typeof e.path === 'string').map(toFile)
        .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      return { model_id: id, files, total_size: files.reduce((n, f) => n + (f.size ?? 0), 0) };
    });
  }

  private async listPage(params: URLSearchParams, sort: 'likes' | 'downloads', limit: number, offset: number, task: string | null): Promise<HubModelList> {
    const want = Math.min(offset + limit, MAX_WINDOW);
    params.set('sort', sort);
    params.set('direction', '-1');
    params.set('limit', String(Math.min(want, PAGE)));
    params.set('full', 'true');
    const path = `/api/models?${params}`;
    const items = want > offset ? await this.cached(['list', path, want], () => this.paged(path, want)) : [];
    const models = items.slice(offset, want).filter((m) => m && typeof m.id === 'string').map(toListModel);
    return { models, total: models.length, limit, offset, task, sort };
  }

  private async cached<T>(key: unknown[], load: () => Promise<T>): Promise<T> {
    try {
      return (await this.cache.getOrLoad(JSON.stringify(key), load)) as T;
    } catch (err) {
      throw facadeError(err, 'model hub');
    }
  }

  /** Reads an array answer and its `rel="next"` pages (same origin only) until `want` items or no next page. */
  private async paged(path: string, want: number, id?: string): Promise<any[]> {
    const out: any[] = [];
    let next: string | undefined = path;
    for (let page = 0; next && out.length < want && page < MAX_TREE_PAGES; page++) {
      const res = await this.fetch(next, id);
      const arr = parseJson(res.text);
      if (!Array.isArray(arr)) throw new UpstreamError('invalid_response', 'the hub answered with something other than a list');
      out.push(...arr);
      next = this.sameOrigin(nextLink(header(res.headers, 'link')), res.url);
    }
    return out.slice(0, want);
  }

  /** A link or redirect target as a path on the hub's own origin, or undefined when it points elsewhere. */
  private sameOrigin(target: string | undefined, from: string): string | undefined {
    if (!target) return undefined;
    const u = new URL(target, from);
    if (u.origin !== this.origin) {
      this.logger.warn({ target: u.origin }, 'hub pointed outside its own origin; not followed');
      return undefined;
    }
    return u.pathname + u.search;
  }

  /**
   * GET on the hub. 2xx → the body; a missing repository/file (404, or 401/403 saying "not found" or "gated")
   * → 404 naming `id`; redirects (renamed repositories) are followed on the same origin; anything else throws
   * an UpstreamError for facadeError to map.
   */
  private async fetch(pathAndQuery: string, id?: string, what = 'model'): Promise<Fetched> {
    let url = this.cfg.baseUrl.replace(/\/$/, '') + pathAndQuery;
    const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9' };
    if (this.cfg.token) headers.authorization = `Bearer ${this.cfg.token}`;
    const timeouts = { connectMs: Math.min(this.connectMs, this.cfg.timeoutMs), firstByteMs: this.cfg.timeoutMs, totalMs: this.cfg.timeoutMs };
    for (let hop = 0; ; hop++) {
      const res = await send(url, { method: 'GET', headers, signal: NEVER, timeouts, passStatus: true });
      const location = header(res.headers, 'location');
      if (res.status >= 300 && res.status < 400 && location && hop < MAX_REDIRECTS) {
        await res.body.dump();
        const target = this.sameOrigin(location, url);
        if (!target) throw new UpstreamError('invalid_response', 'the hub redirected outside its own origin');
        url = this.origin + target;
        continue;
      }
      const text = await readCapped(res.body, 32 * 1024 * 1024);
      if (res.status >= 200 && res.status < 300) return { status: res.status, headers: res.headers, text, url };
      const code = header(res.headers, 'x-error-code') ?? '';
      const missing = res.status === 404 || ((res.status === 401 || res.status === 403) &&
        (/^(RepoNotFound|EntryNotFound|RevisionNotFound|GatedRepo)$/.test(code) || /repository not found/i.test(text)));
      if (missing && id !== undefined) {
        throw notFound(code === 'GatedRepo' ? `The ${what} of ${id} is gated on the model hub.` : `The model hub has no ${what} ${what === 'model' ? id : `for ${id}`}.`);
      }
      if (res.status === 429) {
        const retry = Number(header(res.headers, 'retry-after'));
        throw new ApiError(429, 'rate_limit_error', 'The model hub is rate limiting the gateway; retry later.', 'upstream_rate_limited', null,
          { 'Retry-After': String(Number.isFinite(retry) && retry > 0 ? Math.ceil(retry) : 60) });
      }
      this.logger.warn({ status: res.status, code, path: new URL(url).pathname }, 'model hub error');
      throw new UpstreamError(res.status >= 500 ? 'server_error' : 'bad_request', `hub answered HTTP ${res.status}`, res.status);
    }
  }
}

/** `owner/name` → `owner/name` with each segment percent-encoded; anything off-pattern is a 422 here too. */
function segments(id: string): string {
  if (!HUB_MODEL_ID_RE.test(id) || id.length > 256) {
    throw new ValidationFailure([{ loc: ['path', 'model_id'], msg: 'must be a hub model id: name or owner/name', type: 'string_pattern_mismatch' }]);
  }
  return id.split('/').map(encodeURIComponent).join('/');
}

/** The `rel="next"` target of a Link header. */
export function nextLink(link: string | undefined): string | undefined {
  if (!link) return undefined;
  for (const part of link.split(',')) {
    const m = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (m && /\brel\s*=\s*"?next"?/i.test(m[2])) return m[1];
  }
  return undefined;
}

function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError('invalid_response', 'the hub answered with malformed JSON');
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const isoDate = (v: unknown): string | null => {
  if (typeof v !== 'string') return null;
  const t = Date.parse(v);
  return Number.isFinite(t) ? new Date(t).toISOString() : null;
};
const gated = (v: unknown): false | 'auto' | 'manual' => (v === 'auto' || v === 'manual' ? v : v === true ? 'auto' : false);
const authorOf = (m: any): string | null => str(m.author) ?? (String(m.id).includes('/') ? String(m.id).split('/')[0] : null);

function toListModel(m: any): HubModel {
  return {
    id: m.id, author: authorOf(m), pipeline_tag: str(m.pipeline_tag), library_name: str(m.library_name),
    likes: count(m.likes), downloads: count(m.downloads), tags: strings(m.tags),
    created_at: isoDate(m.createdAt), last_modified: isoDate(m.lastModified), private: m.private === true, gated: gated(m.gated),
  };
}

function licenseOf(m: any): string | null {
  const l = m.cardData?.license;
  if (typeof l === 'string' && l) return l;
  if (Array.isArray(l) && typeof l[0] === 'string') return l[0];
  const tag = strings(m.tags).find((t) => t.startsWith('license:'));
  return tag ? tag.slice('license:'.length) : null;
}

function safetensorsOf(v: any): HubModelDetails['safetensors'] {
  if (!v || typeof v !== 'object' || !v.parameters || typeof v.parameters !== 'object') return null;
  const parameters: Record<string, number> = {};
  for (const [k, n] of Object.entries(v.parameters)) if (typeof n === 'number' && Number.isFinite(n) && n >= 0) parameters[k] = Math.floor(n);
  const total = typeof v.total === 'number' && v.total >= 0 ? Math.floor(v.total) : Object.values(parameters).reduce((a, b) => a + b, 0);
  return { parameters, total };
}

function toDetails(m: any, id: string): HubModelDetails {
  if (!m || typeof m !== 'object' || Array.isArray(m)) throw new UpstreamError('invalid_response', 'the hub answered with something other than a model');
  const obj = (v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null);
  return {
    id: typeof m.id === 'string' ? m.id : id, author: authorOf({ ...m, id: m.id ?? id }), sha: str(m.sha),
    pipeline_tag: str(m.pipeline_tag), library_name: str(m.library_name), tags: strings(m.tags),
    likes: count(m.likes), downloads: count(m.downloads), license: licenseOf(m), card_data: (obj(m.cardData) ?? {}) as HubModelDetails['card_data'],
    siblings_count: Array.isArray(m.siblings) ? m.siblings.length : 0, gated: gated(m.gated), private: m.private === true,
    created_at: isoDate(m.createdAt), last_modified: isoDate(m.lastModified), config: obj(m.config) as HubModelDetails['config'], safetensors: safetensorsOf(m.safetensors),
  };
}

function toFile(e: any): S['HubModelFile'] {
  const lfsSize = e.lfs && typeof e.lfs.size === 'number' ? e.lfs.size : null;
  const size = lfsSize ?? (typeof e.size === 'number' && e.size >= 0 ? e.size : null);
  return { path: e.path, size, lfs: !!e.lfs, blob_id: str(e.oid) };
}
