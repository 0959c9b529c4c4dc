/** Anthropic Messages API wire types: the parts the adapter writes and reads (https://docs.anthropic.com/en/api/messages). */

export type AImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

export type ARequestBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: AImageSource }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string | ARequestBlock[]; is_error?: boolean }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

export interface AMessageParam {
  role: 'user' | 'assistant';
  content: ARequestBlock[];
}

export interface ATool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

export type AToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export interface ARequest {
  model: string;
  messages: AMessageParam[];
  max_tokens: number;
  system?: Array<{ type: 'text'; text: string }>;
  tools?: ATool[];
  tool_choice?: AToolChoice;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id?: string };
  thinking?: { type: 'enabled'; budget_tokens: number };
  stream?: boolean;
}

/**
 * A response content block: text, tool_use, thinking, redacted_thinking — and types added later (server tools,
 * citations), which the mapping tolerates and skips, hence the open shape.
 */
export interface AResponseBlock {
  type: string;
  [field: string]: any;
}

export interface AUsage {
  /** Uncached prompt tokens only: cache reads and writes are counted separately. */
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

export interface AMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AResponseBlock[];
  stop_reason: string | null;
  stop_sequence: string | null;
  usage: AUsage;
}
