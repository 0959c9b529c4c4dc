/**
 * Every setting, read once from the environment. A bad value stops start-up with a message that names
 * the variable (ConfigError). Nothing else in the code reads process.env.
 */
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`${variable}: ${message}`);
  }
}

export type DatabaseConfig =
  | { dialect: 'sqlite'; file: string }
  | { dialect: 'postgres'; url: string; schema?: string };

/** Per upstream gateway: `<ID>_API_KEY` and `<ID>_BASE_URL` (ID upper-cased, `-` as `_`). */
export interface UpstreamSetting {
  apiKey?: string;
  baseUrl?: string;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  database: DatabaseConfig;
  redisUrl?: string;
  adminApiKey?: string;
  keyHashSecret: string;
  logLevel: string;
  /** Maximum JSON / form body in bytes (413 beyond). */
  jsonBodyLimit: number;
  /** Maximum multipart upload in bytes (413 beyond). */
  uploadLimit: number;
  /** Validate every response against the spec (on in tests; costs time in production). */
  validateResponses: boolean;
  /** Multiplier applied to catalog prices when charging credits. */
  priceMarkup: number;
  /** Timeouts for upstream calls in ms. */
  upstreamConnectTimeoutMs: number;
  upstreamFirstByteTimeoutMs: number;
  upstreamTotalTimeoutMs: number;
  /** Retries across candidates/attempts for one request. */
  maxAttempts: number;
  shutdownGraceMs: number;
  /** How often an idle process checks whether to give the C allocator's free memory back (src/memory.ts); 0 = never. */
  memoryTrimIntervalMs: number;
  /** Nothing served for this long: V8's heap reduced by the gateway (src/memory.ts); 0 = never. */
  memoryReduceAfterMs: number;
  /**
   * The longest that quiet spell grows to where the traffic keeps coming back soon after a reduction (src/memory.ts);
   * equal to memoryReduceAfterMs: it never grows.
   */
  memoryReduceMaxMs: number;
  /** Built-in tools and web-search augmentation (src/tools). */
  tools: ToolsConfig;
  /** Model-hub facade (src/facades/hub.ts). */
  hub: HubConfig;
  /** Partner token-catalog facade (src/facades/partner.ts). */
  partner: PartnerConfig;
  /** Catalog discovery: re-fetch every configured gateway's model list this often (ms); 0 = never. */
  catalogSyncIntervalMs: number;
  /** Total time one gateway's model-list fetch may take (ms). */
  catalogSyncTimeoutMs: number;
  /** Catalog health and popularity (model_health, usage) reloaded into memory this often (ms); 0 = on demand only. */
  catalogHealthRefreshMs: number;
  /**
   * Usage records and health observations are written in one batch this long after the first of them waits
   * (src/engine/recorder.ts; sooner once 1,000 wait). Longer: fewer, larger writes; statistics and health see a request later.
   */
  recordsFlushMs: number;
  /** Directory of the catalog seed files (gateways, providers, routers, models); the built-in seeds when unset. */
  catalogSeedsDir?: string;
  /** Image generation and transcription (src/media/). */
  media: MediaConfig;
  /** Active health monitor and probes (src/health/monitor.ts). */
  health: HealthMonitorConfig;
  /** HEALTH_HISTORY_DAYS: days of per-call health history kept (each model keeps its last 100 calls); 0 keeps all. */
  healthHistoryDays: number;
  /** Serve Prometheus metrics at /metrics (METRICS, default on). */
  metricsEnabled: boolean;
  /** Limits, shared state, CORS and crash recovery (src/limits, src/reliability). */
  reliability: ReliabilityConfig;
  env: Record<string, string | undefined>;
}

export interface HealthMonitorConfig {
  /** HEALTH_MONITOR: `auto` (default) runs it only when some gateway key is configured; `on`; `off`. */
  mode: 'auto' | 'on' | 'off';
  /** HEALTH_PROBE_BUDGET: probes per minute over all gateways (a token bucket of this size). */
  budgetPerMinute: number;
  /** Probe a model when it had no call (passive or probe) for this long, by tier; failing ones sooner. */
  intervalsMs: { hot: number; warm: number; cold: number; failing: number };
  /** HEALTH_PROBE_CONCURRENCY: probes in flight at once. */
  concurrency: number;
  /** HEALTH_MONITOR_TICK_MS: how often due probes are looked for. */
  tickMs: number;
}

function healthMonitorConfig(env: Record<string, string | undefined>): HealthMonitorConfig {
  const raw = (env.HEALTH_MONITOR || 'auto').toLowerCase();
  const mode = /^(1|true|yes|on)$/.test(raw) ? 'on' : /^(0|false|no|off)$/.test(raw) ? 'off' : raw === 'auto' ? 'auto' : null;
  if (!mode) throw new ConfigError('HEALTH_MONITOR', `must be auto, on or off, got "${env.HEALTH_MONITOR}"`);
  const s = (name: string, dflt: number) => int(env, name, dflt, 1, 7 * 86_400) * 1000;
  return {
    mode,
    budgetPerMinute: int(env, 'HEALTH_PROBE_BUDGET', 30, 1, 100_000),
    intervalsMs: {
      hot: s('HEALTH_PROBE_HOT_S', 300),
      warm: s('HEALTH_PROBE_WARM_S', 1_800),
      cold: s('HEALTH_PROBE_COLD_S', 21_600),
      failing: s('HEALTH_PROBE_FAILING_S', 60),
    },
    concurrency: int(env, 'HEALTH_PROBE_CONCURRENCY', 4, 1, 256),
    tickMs: int(env, 'HEALTH_MONITOR_TICK_MS', 5_000, 100, 3_600_000),
  };
}

/** Whether any upstream gateway key (`<ID>_API_KEY`, not the admin key) is set: the monitor's `auto` rule. */
export function anyGatewayKey(config: Config): boolean {
  const notGateways = new Set(['ADMIN_API_KEY', 'TAVILY_API_KEY', 'TTS_API_KEY', 'PARTNER_API_KEY']);
  return Object.entries(config.env).some(([k, v]) => /_API_KEY$/.test(k) && !notGateways.has(k) && !!v);
}

/** Default per-key limits (0 = no limit); a key's own limits (admin operation) override them. */
export interface RateLimitDefaults {
  requestsPerMinute: number;
  tokensPerMinute: number;
  concurrentRequests: number;
}

export interface ReliabilityConfig {
  limits: RateLimitDefaults;
  /** Prefix of every Redis key this gateway writes (REDIS_PREFIX), so deployments can share one Redis. */
  redisPrefix: string;
  /** Circuit breaker: consecutive failures that open it, and how long it stays open before one trial call. */
  breakerFailureThreshold: number;
  breakerCooldownMs: number;
  /** Browser origins allowed to call the API (CORS_ORIGINS, comma-separated, or `*`); empty = no CORS. */
  corsOrigins: string[];
  /** Send `Access-Control-Allow-Credentials: true` to listed origins (never with `*`). */
  corsAllowCredentials: boolean;
  /** How often this instance proves it is alive; an instance silent for 3 intervals is dead (its holds are released). */
  instanceHeartbeatMs: number;
  /** A JSON catalog file (gateways + offers) used instead of the default catalog (CATALOG_FILE; tests and demos). */
  catalogFile?: string;
  /**
   * Which proxies' X-Forwarded-For to believe for the client address (TRUST_PROXY, Express's `trust proxy`):
   * false (default: the socket's peer), a hop count, or addresses/subnets/`loopback`. Guests are limited per
   * address, so trusting a header anyone can send would let them reset their own limit.
   */
  trustProxy: boolean | number | string;
}

export interface ToolsConfig {
  /** Tavily-compatible search API; web search is "not configured" without a key. */
  tavilyApiKey?: string;
  tavilyBaseUrl: string;
  /** OpenAI-compatible speech API (`POST {base}/audio/speech`); falls back to OPENAI_API_KEY / OPENAI_BASE_URL. */
  ttsApiKey?: string;
  ttsBaseUrl: string;
  ttsModel: string;
  /** Whole-call limit for one tool's upstream call. */
  timeoutMs: number;
  /** USD per web_search call and per 1,000 characters of text_to_speech input. */
  priceWebSearchUsd: number;
  priceTtsPer1kCharsUsd: number;
  /** Search-augment calls per minute per client address (guests) and per key. */
  guestAugmentPerMinute: number;
  keyAugmentPerMinute: number;
}

export interface HubConfig {
  baseUrl: string;
  token?: string;
  cacheTtlMs: number;
  cacheMaxEntries: number;
  timeoutMs: number;
}

export interface PartnerConfig {
  /** Unset: the partner operations answer 503. */
  baseUrl?: string;
  apiKey?: string;
  cacheTtlMs: number;
  timeoutMs: number;
}

export interface MediaConfig {
  /** The image model used when a request names none (IMAGE_DEFAULT_MODEL). */
  defaultImageModel: string;
  /**
   * The Google Vertex endpoint provider (image gateway `google`): `POST {base}/v1/projects/{p}/locations/{l}/
   * endpoints/{e}:predict` with `Authorization: Bearer {accessToken}`. `{location}` in the base is replaced by
   * the request's location. Without a token the provider is not configured.
   */
  vertex: { baseUrl: string; accessToken?: string; project?: string; location: string; endpointId?: string };
}

function int(env: Record<string, string | undefined>, name: string, dflt: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(name, `must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function num(env: Record<string, string | undefined>, name: string, dflt: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) throw new ConfigError(name, `must be a number between ${min} and ${max}, got "${raw}"`);
  return n;
}

function bool(env: Record<string, string | undefined>, name: string, dflt: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** Sizes like `25mb`, `1048576`, `512kb`. */
function bytes(env: Record<string, string | undefined>, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const m = /^(\d+)\s*(b|kb|mb|gb)?$/i.exec(raw.trim());
  if (!m) throw new ConfigError(name, `must be a size like 1048576, 512kb or 25mb, got "${raw}"`);
  const mult = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(m[2] ?? 'b').toLowerCase() as 'b'];
  return Number(m[1]) * mult;
}

function parseDatabase(raw: string | undefined, dataDir: string): DatabaseConfig {
  if (!raw) return { dialect: 'sqlite', file: path.join(dataDir, 'gateway.db') };
  if (/^postgres(ql)?:\/\//.test(raw)) return { dialect: 'postgres', url: raw };
  if (raw.startsWith('sqlite:')) {
    const file = raw.slice('sqlite:'.length).replace(/^\/\//, '');
    if (!file) throw new ConfigError('DATABASE_URL', 'sqlite: needs a file path, e.g. sqlite:/var/lib/gateway.db');
    return { dialect: 'sqlite', file };
  }
  throw new ConfigError('DATABASE_URL', `must start with postgres://, postgresql:// or sqlite:, got "${raw.replace(/\/\/[^@]*@/, '//***@')}"`);
}

/** DATABASE_SCHEMA: a PostgreSQL schema of its own (created if missing), so several deployments share a database. */
function withSchema(db: DatabaseConfig, schema: string | undefined): DatabaseConfig {
  if (!schema) return db;
  if (db.dialect !== 'postgres') throw new ConfigError('DATABASE_SCHEMA', 'applies to PostgreSQL only (set DATABASE_URL=postgres://…)');
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new ConfigError('DATABASE_SCHEMA', `must be a lower-case identifier, got "${schema}"`);
  return { ...db, schema };
}

function httpUrl(env: Record<string, string | undefined>, name: string, dflt?: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^https?:\/\/[^/?#]+/.test(raw)) throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

function toolsConfig(env: Record<string, string | undefined>): ToolsConfig {
  return {
    tavilyApiKey: env.TAVILY_API_KEY || undefined,
    tavilyBaseUrl: httpUrl(env, 'TAVILY_BASE_URL', 'https://api.tavily.com')!,
    ttsApiKey: env.TTS_API_KEY || env.OPENAI_API_KEY || undefined,
    ttsBaseUrl: httpUrl(env, 'TTS_BASE_URL') ?? httpUrl(env, 'OPENAI_BASE_URL', 'https://api.openai.com/v1')!,
    ttsModel: env.TTS_MODEL || 'tts-1',
    timeoutMs: int(env, 'TOOL_TIMEOUT_MS', 60_000, 1),
    priceWebSearchUsd: num(env, 'TOOL_PRICE_WEB_SEARCH', 0.008, 0, 100),
    priceTtsPer1kCharsUsd: num(env, 'TOOL_PRICE_TTS_PER_1K_CHARS', 0.015, 0, 100),
    guestAugmentPerMinute: int(env, 'GUEST_AUGMENT_PER_MINUTE', 10, 0),
    keyAugmentPerMinute: int(env, 'KEY_AUGMENT_PER_MINUTE', 60, 0),
  };
}

function mediaConfig(env: Record<string, string | undefined>): MediaConfig {
  const base = env.GOOGLE_VERTEX_BASE_URL;
  if (base && !/^https?:\/\/[^/?#]+/.test(base)) throw new ConfigError('GOOGLE_VERTEX_BASE_URL', `must be an http(s) URL, got "${base}"`);
  return {
    defaultImageModel: env.IMAGE_DEFAULT_MODEL || 'gpt-image-1',
    vertex: {
      baseUrl: (base || 'https://{location}-aiplatform.googleapis.com').replace(/\/+$/, ''),
      accessToken: env.GOOGLE_VERTEX_ACCESS_TOKEN || undefined,
      project: env.GOOGLE_VERTEX_PROJECT || undefined,
      location: env.GOOGLE_VERTEX_LOCATION || 'us-central1',
      endpointId: env.GOOGLE_VERTEX_ENDPOINT_ID || undefined,
    },
  };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * The key-hash secret: KEY_HASH_SECRET, or one generated once and persisted under the data directory, so
 * keys stay valid across restarts without setup.
 */
function keyHashSecret(env: Record<string, string | undefined>, dataDir: string): string {
  const raw = env.KEY_HASH_SECRET;
  if (raw !== undefined && raw !== '') {
    if (raw.length < 16) throw new ConfigError('KEY_HASH_SECRET', 'must be at least 16 characters');
    return raw;
  }
  const file = path.join(dataDir, 'key-hash-secret');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    fs.mkdirSync(dataDir, { recursive: true });
    const secret = crypto.randomBytes(32).toString('base64url');
    try {
      fs.writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' });
      return secret;
    } catch {
      return fs.readFileSync(file, 'utf8').trim(); // another process won the race
    }
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const logLevel = (env.LOG_LEVEL || 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  const host = env.HOST || '0.0.0.0';
  const redisUrl = env.REDIS_URL || undefined;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new ConfigError('REDIS_URL', 'must start with redis:// or rediss://');
  const memoryReduceAfterMs = int(env, 'MEMORY_REDUCE_AFTER_MS', 30_000, 0);
  const memoryReduceMaxMs = int(env, 'MEMORY_REDUCE_MAX_MS', 8 * memoryReduceAfterMs, memoryReduceAfterMs);
  return {
    port: int(env, 'PORT', 8000, 0, 65535),
    host,
    dataDir,
    database: withSchema(parseDatabase(env.DATABASE_URL, dataDir), env.DATABASE_SCHEMA),
    redisUrl,
    adminApiKey: env.ADMIN_API_KEY || undefined,
    keyHashSecret: keyHashSecret(env, dataDir),
    logLevel,
    jsonBodyLimit: bytes(env, 'BODY_LIMIT', 10 * 1024 * 1024),
    uploadLimit: bytes(env, 'UPLOAD_LIMIT', 25 * 1024 * 1024),
    validateResponses: bool(env, 'VALIDATE_RESPONSES', false),
    priceMarkup: num(env, 'PRICE_MARKUP', 1, 0, 100),
    upstreamConnectTimeoutMs: int(env, 'UPSTREAM_CONNECT_TIMEOUT_MS', 5_000, 1),
    upstreamFirstByteTimeoutMs: int(env, 'UPSTREAM_FIRST_BYTE_TIMEOUT_MS', 60_000, 1),
    upstreamTotalTimeoutMs: int(env, 'UPSTREAM_TOTAL_TIMEOUT_MS', 600_000, 1),
    maxAttempts: int(env, 'UPSTREAM_MAX_ATTEMPTS', 3, 1, 10),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 10_000, 0),
    memoryTrimIntervalMs: int(env, 'MEMORY_TRIM_INTERVAL_MS', 5_000, 0),
    memoryReduceAfterMs,
    memoryReduceMaxMs,
    tools: toolsConfig(env),
    hub: {
      baseUrl: httpUrl(env, 'HUB_BASE_URL', 'https://huggingface.co')!,
      token: env.HUB_TOKEN || undefined,
      cacheTtlMs: int(env, 'HUB_CACHE_TTL_MS', 300_000, 0),
      cacheMaxEntries: int(env, 'HUB_CACHE_MAX_ENTRIES', 1_000, 1),
      timeoutMs: int(env, 'HUB_TIMEOUT_MS', 10_000, 1),
    },
    partner: {
      baseUrl: httpUrl(env, 'PARTNER_BASE_URL'),
      apiKey: env.PARTNER_API_KEY || undefined,
      cacheTtlMs: int(env, 'PARTNER_CACHE_TTL_MS', 60_000, 0),
      timeoutMs: int(env, 'PARTNER_TIMEOUT_MS', 10_000, 1),
    },
    catalogSyncIntervalMs: int(env, 'CATALOG_SYNC_INTERVAL_MS', 3_600_000, 0),
    catalogSyncTimeoutMs: int(env, 'CATALOG_SYNC_TIMEOUT_MS', 30_000, 1),
    catalogHealthRefreshMs: int(env, 'CATALOG_HEALTH_REFRESH_MS', 15_000, 0),
    recordsFlushMs: int(env, 'RECORDS_FLUSH_MS', 250, 1, 60_000),
    catalogSeedsDir: env.CATALOG_SEEDS_DIR ? path.resolve(env.CATALOG_SEEDS_DIR) : undefined,
    media: mediaConfig(env),
    health: healthMonitorConfig(env),
    healthHistoryDays: int(env, 'HEALTH_HISTORY_DAYS', 7, 0, 36_500),
    metricsEnabled: bool(env, 'METRICS', true),
    reliability: reliabilityConfig(env),
    env,
  };
}

function trustProxy(raw: string | undefined): boolean | number | string {
  if (!raw || /^(false|0|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  if (!/^[\w.:/,\s-]+$/.test(raw)) throw new ConfigError('TRUST_PROXY', `must be false, a hop count, or addresses/subnets like "loopback, 10.0.0.0/8", got "${raw}"`);
  return raw;
}

function reliabilityConfig(env: Record<string, string | undefined>): ReliabilityConfig {
  const corsOrigins = (env.CORS_ORIGINS ?? '').split(',').map((o) => o.trim().replace(/\/+$/, '')).filter(Boolean);
  for (const o of corsOrigins) {
    if (o !== '*' && !/^https?:\/\/[^/?#\s]+$/.test(o)) throw new ConfigError('CORS_ORIGINS', `each origin must be like https://app.example.com (or *), got "${o}"`);
  }
  const prefix = env.REDIS_PREFIX ?? 'gw:';
  if (!/^[A-Za-z0-9:_.-]{1,64}$/.test(prefix)) throw new ConfigError('REDIS_PREFIX', 'must be 1-64 characters of letters, digits, : _ . -');
  const credentials = bool(env, 'CORS_ALLOW_CREDENTIALS', false);
  if (credentials && corsOrigins.includes('*')) throw new ConfigError('CORS_ALLOW_CREDENTIALS', 'cannot be used with CORS_ORIGINS=*; list the origins');
  return {
    limits: {
      requestsPerMinute: int(env, 'RATE_LIMIT_RPM', 600, 0),
      tokensPerMinute: int(env, 'RATE_LIMIT_TPM', 2_000_000, 0),
      concurrentRequests: int(env, 'RATE_LIMIT_CONCURRENT', 100, 0),
    },
    redisPrefix: prefix,
    breakerFailureThreshold: int(env, 'BREAKER_FAILURE_THRESHOLD', 5, 1, 1000),
    breakerCooldownMs: int(env, 'BREAKER_COOLDOWN_MS', 30_000, 1),
    corsOrigins,
    corsAllowCredentials: credentials,
    instanceHeartbeatMs: int(env, 'INSTANCE_HEARTBEAT_MS', 5_000, 100, 600_000),
    catalogFile: env.CATALOG_FILE ? path.resolve(env.CATALOG_FILE) : undefined,
    trustProxy: trustProxy(env.TRUST_PROXY),
  };
}

/** `<ID>_API_KEY` / `<ID>_BASE_URL` for one upstream gateway id. */
export function upstreamSetting(config: Config, gatewayId: string): UpstreamSetting {
  const prefix = gatewayId.toUpperCase().replace(/-/g, '_');
  const apiKey = config.env[`${prefix}_API_KEY`] || undefined;
  const baseUrl = config.env[`${prefix}_BASE_URL`] || undefined;
  if (baseUrl && !/^https?:\/\//.test(baseUrl)) throw new ConfigError(`${prefix}_BASE_URL`, 'must be an http(s) URL');
  return { apiKey, baseUrl };
}
