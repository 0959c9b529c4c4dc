/**
 * Table types for Kysely. Money is integer nano-USD (1e-9 USD) so per-token prices never drift as floats;
 * request-path timestamps (usage, health) are epoch milliseconds for cheap range scans; booleans are 0/1
 * integers so one schema serves SQLite and PostgreSQL.
 */
import type { Generated } from 'kysely';

export interface UsersTable {
  id: Generated<number>;
  name: string;
  created_at: string;
}

export interface ApiKeysTable {
  id: Generated<number>;
  user_id: number;
  name: string;
  key_hash: string;
  key_prefix: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

export interface CreditBalancesTable {
  user_id: number;
  balance_nano: number;
  updated_at: string;
}

export interface CreditLedgerTable {
  id: Generated<number>;
  user_id: number;
  delta_nano: number;
  /** grant | hold | settle | release | charge | adjust */
  kind: string;
  reference: string | null;
  created_at: string;
}

export interface CreditHoldsTable {
  id: string;
  user_id: number;
  amount_nano: number;
  created_at: number;
  expires_at: number;
  settled_at: number | null;
  /** The gateway process that made the hold (gateway_instances.id); null for holds made outside one. */
  instance_id: Generated<string | null>;
}

export interface ChatSessionsTable {
  id: Generated<number>;
  user_id: number;
  title: string;
  model: string;
  created_at: string;
  updated_at: string;
  is_active: number;
}

export interface ChatMessagesTable {
  id: Generated<number>;
  session_id: number;
  role: string;
  content: string;
  model: string;
  tokens: number;
  created_at: string;
}

export interface UsageRecordsTable {
  id: Generated<number>;
  request_id: string;
  user_id: number | null;
  key_id: number | null;
  endpoint: string;
  gateway: string;
  provider: string;
  model: string;
  /** success | error | timeout | rate_limited | cancelled */
  status: string;
  error_class: string | null;
  http_status: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cost_nano: number;
  latency_ms: number;
  ttft_ms: number | null;
  created_at: number;
}

export interface ModelHealthTable {
  gateway: string;
  model: string;
  provider: string;
  calls: number;
  successes: number;
  errors: number;
  total_latency_ms: number;
  consecutive_failures: number;
  last_status: string | null;
  last_error: string | null;
  last_latency_ms: number | null;
  last_checked: number | null;
  last_success: number | null;
  last_failure: number | null;
}

export interface ModelHealthHistoryTable {
  id: Generated<number>;
  gateway: string;
  model: string;
  ts: number;
  ok: number;
  status: string;
  latency_ms: number | null;
  /** passive | probe */
  source: string;
}

export interface CatalogOffersTable {
  gateway: string;
  upstream_model: string;
  name: string | null;
  description: string | null;
  context_length: number | null;
  max_output_tokens: number | null;
  /** USD per token as decimal text, as published; null when the upstream does not publish prices. */
  prompt_price: string | null;
  completion_price: string | null;
  /** JSON of further facts the upstream listed (modalities, capabilities), or null. */
  extra: string | null;
  synced_at: number;
}

export interface CatalogSyncTable {
  gateway: string;
  last_sync: number | null;
  last_attempt: number | null;
  model_count: number;
}

/**
 * Rollup of usage_records at two grains, `hour` and `day` (migration 0003), kept in the same transaction as the
 * raw rows so statistics over long windows read a few rows per day instead of every request. Latency and speed
 * sums cover successful requests only, as the statistics define their averages.
 */
export interface UsageRollupTable {
  grain: 'hour' | 'day';
  /** Start of the hour or UTC day, epoch ms. */
  period: number;
  gateway: string;
  provider: string;
  model: string;
  requests: number;
  successes: number;
  /** error | timeout | rate_limited (cancelled counts in requests only) */
  failures: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_nano: number;
  latency_sum: number;
  ttft_sum: number;
  ttft_n: number;
  tps_sum: number;
  tps_n: number;
}

/**
 * When each key owner was last seen per scope ('' = any): (gateway, ''), ('', model), (gateway, model) and
 * ('', ''). Every statistics window ends now, so "distinct users in the window" is exactly "users whose
 * last_at is inside it": an index range count instead of a distinct over all requests.
 */
export interface UsageUserSeenTable {
  scope_gateway: string;
  scope_model: string;
  user_id: number;
  last_at: number;
}

/** Health calls per (gateway, model) and 5-minute bucket: the unit of uptime and of the 24 h counters. */
export interface ModelHealthBucketsTable {
  gateway: string;
  model: string;
  bucket: number;
  calls: number;
  successes: number;
  latency_sum: number;
  latency_n: number;
}

/** A period during which a model was `unhealthy` on a gateway; at most one open (resolved_at null) per pair. */
export interface HealthIncidentsTable {
  id: Generated<number>;
  gateway: string;
  model: string;
  provider: string;
  started_at: number;
  resolved_at: number | null;
  error_message: string | null;
}

export interface ApiKeyLimitsTable {
  key_id: number;
  /** null: the configured default. 0: no limit. */
  requests_per_minute: number | null;
  tokens_per_minute: number | null;
  concurrent_requests: number | null;
  updated_at: string;
}

export interface GatewayInstancesTable {
  id: string;
  hostname: string;
  pid: number;
  started_at: number;
  heartbeat_at: number;
  stopped_at: number | null;
}

export interface Database {
  users: UsersTable;
  api_keys: ApiKeysTable;
  credit_balances: CreditBalancesTable;
  credit_ledger: CreditLedgerTable;
  credit_holds: CreditHoldsTable;
  chat_sessions: ChatSessionsTable;
  chat_messages: ChatMessagesTable;
  usage_records: UsageRecordsTable;
  model_health: ModelHealthTable;
  model_health_history: ModelHealthHistoryTable;
  catalog_offers: CatalogOffersTable;
  catalog_sync: CatalogSyncTable;
  usage_rollup: UsageRollupTable;
  usage_user_seen: UsageUserSeenTable;
  model_health_buckets: ModelHealthBucketsTable;
  health_incidents: HealthIncidentsTable;
  api_key_limits: ApiKeyLimitsTable;
  gateway_instances: GatewayInstancesTable;
}
