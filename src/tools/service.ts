/**
 * Tool listing and execution. Execution of a billed tool follows the credit rule of the whole gateway: hold the
 * price before the upstream call (402 when the balance cannot cover it), settle it on success, release it on
 * failure — so a failed run costs nothing and concurrent runs never overspend. Every run that reached its tool
 * leaves a usage record (endpoint `tool:<name>`, cost in nano-USD).
 */
import type { Config } from '../config.js';
import { NEVER } from '../cancel.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/index.js';
import type { Recorder } from '../engine/recorder.js';
import type { Principal } from '../auth.js';
import type { components } from '../../generated/api.js';
import { insufficientCredits, notFound } from '../errors.js';
import { UpstreamError } from '../engine/types.js';
import { nanoToUsd, newHoldId } from '../store/credits.js';
import { ToolRegistry, toolDefinition, toolDetail, toolInfo, type BuiltinTool, type ToolDefinition, type ToolDetail, type ToolInfo } from './registry.js';
import { TavilyClient, webSearchTool } from './web-search.js';
import { textToSpeechTool } from './tts.js';

export type ToolExecuteResponse = components['schemas']['ToolExecuteResponse'];

/** A hold outlives any run (the tool timeout) by a margin; an orphan (crashed process) is released later. */
const HOLD_TTL_MS = 15 * 60_000;

export function buildToolRegistry(config: Config, tavily: TavilyClient): ToolRegistry {
  return new ToolRegistry([
    webSearchTool(tavily, config.tools),
    textToSpeechTool(config.tools, config.upstreamConnectTimeoutMs),
  ]);
}

export class ToolService {
  constructor(
    readonly registry: ToolRegistry,
    private readonly store: Store,
    private readonly recorder: Recorder,
    private readonly logger: Logger,
  ) {}

  list(): ToolInfo[] {
    return this.registry.all().map(toolInfo);
  }

  definitions(): ToolDefinition[] {
    return this.registry.all().map(toolDefinition);
  }

  detail(name: string): ToolDetail {
    return toolDetail(this.tool(name));
  }

  private tool(name: string): BuiltinTool {
    const t = this.registry.get(name);
    if (!t) throw notFound(`Tool ${JSON.stringify(name)} not found. GET /v1/tools lists the available tools.`);
    return t;
  }

  /**
   * `signal` follows the client (a disconnect aborts the upstream call and releases the hold); the tool's own
   * timeout (TOOL_TIMEOUT_MS) is applied by the upstream client and reported as a failed execution.
   */
  async execute(principal: Principal, requestId: string, name: string, rawParams: unknown, signal: AbortSignal = NEVER): Promise<ToolExecuteResponse> {
    const tool = this.tool(name);
    const params = this.registry.validate(tool, rawParams);
    const started = performance.now();
    const elapsed = () => Math.round((performance.now() - started) * 1000) / 1000;
    const failed = (error: string): ToolExecuteResponse => ({ success: false, tool_name: name, result: null, error, execution_time_ms: elapsed(), cost_usd: 0 });

    const unavailable = tool.unavailable();
    if (unavailable) {
      this.record(principal, requestId, tool, 'error', 'not_configured', 0, elapsed(), 503);
      return failed(unavailable);
    }

    // The admin credential has no balance; its runs are not charged.
    const price = tool.billed && !principal.admin ? tool.priceNano(params) : 0;
    const holdId = `tool_${newHoldId()}`;
    if (price > 0 && !(await this.store.credits.hold(principal.userId, holdId, price, HOLD_TTL_MS))) {
      throw insufficientCredits(`Not enough credits for ${name}: it costs $${nanoToUsd(price).toFixed(6)} per run.`);
    }

    let result: Record<string, unknown>;
    try {
      result = await tool.run(params, { signal });
    } catch (err) {
      if (price > 0) await this.store.credits.release(holdId);
      if (!(err instanceof UpstreamError)) throw err;
      this.logger.warn({ tool: name, kind: err.kind, status: err.status, requestId }, 'tool upstream failed');
      this.record(principal, requestId, tool, err.kind === 'timeout' ? 'timeout' : err.kind === 'rate_limited' ? 'rate_limited' : 'error',
        err.kind, 0, elapsed(), err.status);
      return failed(`${name} failed: ${err.message}`);
    }
    const charged = price > 0 ? await this.store.credits.settle(holdId, price) : 0;
    this.record(principal, requestId, tool, 'success', null, charged, elapsed());
    return { success: true, tool_name: name, result: result as ToolExecuteResponse['result'], error: null, execution_time_ms: elapsed(), cost_usd: nanoToUsd(charged) };
  }

  private record(p: Principal, requestId: string, tool: BuiltinTool, status: string, errorClass: string | null, costNano: number,
    latencyMs: number, upstreamStatus?: number) {
    const upstream = tool.upstream ?? 'local';
    this.recorder.recordUsage({
      request_id: requestId, user_id: p.admin ? null : p.userId, key_id: p.admin ? null : p.keyId,
      endpoint: `tool:${tool.name}`, gateway: upstream, provider: upstream, model: tool.name,
      status, error_class: errorClass, http_status: status === 'success' ? 200 : (upstreamStatus ?? 502),
      prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cost_nano: costNano,
      latency_ms: Math.round(latencyMs), ttft_ms: null, created_at: Date.now(),
    });
  }
}
