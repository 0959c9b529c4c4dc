/**
 * Partner token-catalog facade. The upstream is a token registry at PARTNER_BASE_URL with one endpoint
 * (our own contract, since the interface does not name a public API):
 *
 *   GET {PARTNER_BASE_URL}/models
 *   Authorization: Bearer {PARTNER_API_KEY}        (only when the key is set)
 *   200 application/json — an array of
 *     { "model_id": string (may contain "/"), "name": string, "symbol": string, "token_address": string,
 *       "chain": string, "is_graduated": boolean, "market_cap_usd": number|null, "price_usd": number|null,
 *       "holders": integer|null, "created_at": RFC 3339 string|null }
 *   (a `{"models": [...]}` wrapper is accepted too)
 *
 * Entries without a string `model_id` or a boolean `is_graduated` are dropped (logged); a missing name falls back
 * to the id, missing strings to "", and unusable numbers or dates to null. The whole catalog is fetched once per
 * PARTNER_CACHE_TTL_MS and filtered here (`is_graduated` true / false / null = all), sorted by market cap
 * (unknown last), then model_id. Unset PARTNER_BASE_URL → 503; upstream timeout → 504; anything else → 502.
 */
import type { PartnerConfig } from '../config.js';
import type { Logger } from '../logger.js';
import type { components } from '../../generated/api.js';
import { ApiError } from '../errors.js';
import { UpstreamError } from '../engine/types.js';
import { readCapped, send } from '../providers/http.js';
import { NEVER } from '../cancel.js';
import { TtlCache, facadeError } from './common.js';

export type PartnerModel = components['schemas']['PartnerModel'];

export class PartnerFacade {
  private readonly cache: TtlCache<PartnerModel[]>;

  constructor(private readonly cfg: PartnerConfig, private readonly connectMs: number, private readonly logger: Logger) {
    this.cache = new TtlCache(cfg.cacheTtlMs, 1);
  }

  /** The catalog after the `is_graduated` filter, in the documented order. */
  async models(isGraduated: boolean | null): Promise<PartnerModel[]> {
    const all = await this.catalog();
    return isGraduated === null ? all : all.filter((m) => m.is_graduated === isGraduated);
  }

  async check(modelId: string, isGraduated: boolean | null): Promise<PartnerModel | null> {
    return (await this.models(isGraduated)).find((m) => m.model_id === modelId) ?? null;
  }

  private async catalog(): Promise<PartnerModel[]> {
    const base = this.cfg.baseUrl;
    if (!base) {
      throw new ApiError(503, 'service_unavailable', 'The partner catalog is not configured on this gateway (PARTNER_BASE_URL).', 'partner_not_configured');
    }
    try {
      return await this.cache.getOrLoad('models', () => this.load(base));
    } catch (err) {
      throw facadeError(err, 'partner catalog');
    }
  }

  private async load(base: string): Promise<PartnerModel[]> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.cfg.apiKey) headers.authorization = `Bearer ${this.cfg.apiKey}`;
    const t = this.cfg.timeoutMs;
    const res = await send(`${base}/models`, {
      method: 'GET', headers, signal: NEVER, timeouts: { connectMs: Math.min(this.connectMs, t), firstByteMs: t, totalMs: t },
    });
    let body: any;
    try {
      body = JSON.parse(await readCapped(res.body, 64 * 1024 * 1024));
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      throw new UpstreamError('invalid_response', 'the partner catalog answered with malformed JSON');
    }
    const list = Array.isArray(body) ? body : Array.isArray(body?.models) ? body.models : null;
    if (!list) throw new UpstreamError('invalid_response', 'the partner catalog answered with something other than a list of models');
    const models: PartnerModel[] = [];
    let dropped = 0;
    for (const raw of list) {
      const m = toModel(raw);
      if (m) models.push(m);
      else dropped++;
    }
    if (dropped) this.logger.warn({ dropped }, 'partner catalog entries without model_id or is_graduated were dropped');
    return models.sort(byMarketCap);
  }
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');
const amount = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);

function toModel(raw: any): PartnerModel | null {
  if (!raw || typeof raw !== 'object' || typeof raw.model_id !== 'string' || !raw.model_id || typeof raw.is_graduated !== 'boolean') return null;
  const created = typeof raw.created_at === 'string' ? Date.parse(raw.created_at) : NaN;
  return {
    model_id: raw.model_id,
    name: text(raw.name) || raw.model_id,
    symbol: text(raw.symbol),
    token_address: text(raw.token_address),
    chain: text(raw.chain),
    is_graduated: raw.is_graduated,
    market_cap_usd: amount(raw.market_cap_usd),
    price_usd: amount(raw.price_usd),
    holders: Number.isInteger(raw.holders) && raw.holders >= 0 ? raw.holders : null,
    created_at: Number.isFinite(created) ? new Date(created).toISOString() : null,
  };
}

function byMarketCap(a: PartnerModel, b: PartnerModel): number {
  const ca = a.market_cap_usd ?? -1;
  const cb = b.market_cap_usd ?? -1;
  if (ca !== cb) return cb - ca;
  return a.model_id < b.model_id ? -1 : a.model_id > b.model_id ? 1 : 0;
}
