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
  api_key_limits: ApiKeyLimitsTable;
  gateway_instances: GatewayInstancesTable;
}
