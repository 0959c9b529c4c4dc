/** The /v1/messages wire mapping (src/wire/anthropic-messages.ts) and the Anthropic error types, unit by unit. */
import { expect } from 'chai';
import { AnthropicEventWriter, parseMessagesRequest, stopReason, toAnthropicMessage } from '../../src/wire/anthropic-messages.js';
import { anthropicErrorType } from '../../src/errors.js';
import { emptyUsage } from '../../src/engine/types.js';

describe('unit: Anthropic Messages wire', () => {
  it('stop reasons: length, tool calls, a named stop sequence, a content filter (refusal), else end_turn', () => {
    expect(stopReason('length', null)).to.equal('max_tokens');
    expect(stopReason('tool_calls', null)).to.equal('tool_use');
    expect(stopReason('stop', 'STOP')).to.equal('stop_sequence');
    expect(stopReason('stop', null)).to.equal('end_turn');
    expect(stopReason('content_filter', null)).to.equal('refusal');
  });

  it('error types by status, as the spec lists them (504 is timeout_error)', () => {
    expect([400, 401, 402, 403, 404, 413, 422, 429, 500, 502, 503, 504, 529].map(anthropicErrorType)).to.deep.equal([
      'invalid_request_error', 'authentication_error', 'billing_error', 'permission_error', 'not_found_error', 'request_too_large',
      'invalid_request_error', 'rate_limit_error', 'api_error', 'api_error', 'overloaded_error', 'timeout_error', 'overloaded_error']);
  });

  it('parses blocks: text blocks joined by lines, tool results as tool messages, thinking kept, the beta header kept', () => {
    const req = parseMessagesRequest({
      model: 'm', max_tokens: 10, system: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'text', text: 'y' }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's' }, { type: 'tool_use', id: 'tu1', name: 'f', input: { q: 1 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'ok', is_error: true }] },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
    }, 'beta-1');
    expect(req.messages).to.deep.equal([
      { role: 'system', content: 'a\nb' },
      { role: 'user', content: 'x\ny' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'tu1', name: 'f', arguments: '{"q":1}' }], thinking: [{ text: 't', signature: 's' }] },
      { role: 'tool', toolCallId: 'tu1', content: 'ok', isError: true },
    ]);
    expect(req).to.include({ toolChoice: 'required', parallelToolCalls: false, anthropicBeta: 'beta-1', maxTokens: 10 });
  });

  it('a translated message: thinking, text, tool_use in that order; usage without cache counts in input_tokens', () => {
    const msg = toAnthropicMessage({
      id: 'chatcmpl-abc', model: 'up', created: 0,
      choices: [{ index: 0, content: 'hi', toolCalls: [{ id: 'c1', name: 'f', arguments: '{"a":1}' }], thinking: [{ text: 'hmm' }], finishReason: 'tool_calls' }],
      usage: { ...emptyUsage(), promptTokens: 10, cachedTokens: 4, completionTokens: 3 },
    }, 'dev/model');
    expect(msg).to.deep.equal({
      id: 'msg_abc', type: 'message', role: 'assistant', model: 'dev/model',
      content: [{ type: 'thinking', thinking: 'hmm', signature: '' }, { type: 'text', text: 'hi' }, { type: 'tool_use', id: 'c1', name: 'f', input: { a: 1 } }],
      stop_reason: 'tool_use', stop_sequence: null,
      usage: { input_tokens: 6, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 4 },
    });
  });

  it('text deltas in an open block are the bytes of the generic event (no JSON.stringify), said ASCII only when they are', () => {
    const w = new AnthropicEventWriter('dev/model');
    const generic = (index: number, text: string) => `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } })}\n\n`;
    w.write({ type: 'start', id: 'u', model: 'm' });
    expect(w.ascii, 'message_start names the model: not known').to.equal(false);
    const first = w.write({ type: 'text', index: 0, text: 'Hi' });
    expect(first.endsWith(generic(0, 'Hi'))).to.equal(true);
    expect(w.ascii, 'with the block\'s start: not known').to.equal(false);
    for (const text of [' plain', 'café', 'say "hi"', 'line\nbreak', '😀', 'lone \ud800', 'x'.repeat(300)]) {
      expect(w.write({ type: 'text', index: 0, text }), JSON.stringify(text)).to.equal(generic(0, text));
      expect(w.ascii, JSON.stringify(text)).to.equal(text === ' plain');
    }
    w.write({ type: 'tool_call_start', index: 0, toolIndex: 0, id: 't', name: 'f' });
    const again = w.write({ type: 'text', index: 0, text: 'after' });
    expect(again.endsWith(generic(2, 'after')), 'a new text block after the tool use: index 2').to.equal(true);
    expect(w.write({ type: 'text', index: 0, text: 'more' })).to.equal(generic(2, 'more'));
  });

  it('native events are forwarded as they came, only message_start names the catalog model; the writer adds no end', () => {
    const w = new AnthropicEventWriter('dev/model');
    const start = w.write({ type: 'anthropic_raw', event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', model: 'claude-x', usage: { input_tokens: 3 } } } });
    expect(start).to.equal('event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"dev/model","usage":{"input_tokens":3}}}\n\n');
    expect(w.write({ type: 'anthropic_raw', event: 'ping', data: { type: 'ping' } })).to.equal('event: ping\ndata: {"type":"ping"}\n\n');
    // with the upstream's own line, that line as it came (not serialised again); message_start is still renamed
    expect(w.write({ type: 'anthropic_raw', event: 'content_block_delta', data: { type: 'content_block_delta' }, json: '{"type": "content_block_delta", "index": 0}' }))
      .to.equal('event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0}\n\n');
    expect(w.write({ type: 'anthropic_raw', event: 'message_start', data: { type: 'message_start', message: { id: 'm', model: 'claude-x' } }, json: '{"type":"message_start","message":{"id":"m","model":"claude-x"}}' }))
      .to.equal('event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"dev/model"}}\n\n');
    expect(w.write({ type: 'text', index: 0, text: 'mapped twin of a raw event' })).to.equal('');
    expect(w.end(emptyUsage())).to.equal('');
  });
});
