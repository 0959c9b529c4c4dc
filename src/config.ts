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
  /** Active health monitor and probes (src/health/monitor.ts). */
  health: HealthMonitorConfig;
  /** Serve Prometheus metrics at /metrics (METRICS, default on). */
  metricsEnabled: boolean;
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
  return Object.entries(config.env).some(([k, v]) => /_API_KEY$/.test(k) && k !== 'ADMIN_API_KEY' && !!v);
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
  return {
    port: int(env, 'PORT', 8000, 0, 65535),
    host,
    dataDir,
    database: parseDatabase(env.DATABASE_URL, dataDir),
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
    health: healthMonitorConfig(env),
    metricsEnabled: bool(env, 'METRICS', true),
    env,
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
