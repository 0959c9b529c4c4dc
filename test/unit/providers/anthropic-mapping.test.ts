import { expect } from 'chai';
import { UpstreamError, type Message } from '../../../src/engine/types.js';
import { jsonInstruction, nativeBody, toAnthropicRequest, toToolChoice } from '../../../src/providers/anthropic/request.js';
import { anthropicStreamError, fromAnthropicMessage, mapStopReason, mapUsage } from '../../../src/providers/anthropic/response.js';
import { baseRequest } from './support.js';

describe('anthropic mapping: internal -> wire', () => {
  const conversation: Message[] = [
    { role: 'system', content: 'You are terse.' },
    { role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'user', content: [{ type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' }, { type: 'image', url: 'https://example.com/cat.jpg' }] },
    {
      role: 'assistant',
      content: 'Checking.',
      thinking: [
        { text: 'Need the weather tool.', signature: 'EqQBsig' },
        { text: 'unsigned reasoning from an OpenAI-style upstream' },
        { text: '', signature: 'gemini:CiQBabc' },
        { text: 'EmwKredacted', redacted: true },
      ],
      toolCalls: [
        { id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { id: 'toolu_2', name: 'get_time', arguments: '' },
      ],
    },
    { role: 'tool', toolCallId: 'toolu_1', content: '18°C' },
    { role: 'tool', toolCallId: 'toolu_2', content: 'clock broken', isError: true },
    { role: 'user', content: 'Thanks' },
  ];

  it('hoists system/developer, merges same-role turns, and maps images, tool calls, results and thinking', () => {
    const wire = toAnthropicRequest(baseRequest({ messages: conversation }), 'claude-3-5-haiku-20241022', false);
    expect(wire.model).to.equal('claude-3-5-haiku-20241022');
    expect(wire.system).to.deep.equal([
      { type: 'text', text: 'You are terse.' },
      { type: 'text', text: 'Answer in English.' },
    ]);
    expect(wire.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'user']);
    expect(wire.messages[0]!.content).to.deep.equal([
      { type: 'text', text: 'Weather in Paris?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
    // Thinking first; the unsigned and the Gemini-signed blocks are not Anthropic's to verify, so they stay home.
    expect(wire.messages[1]!.content).to.deep.equal([
      { type: 'thinking', thinking: 'Need the weather tool.', signature: 'EqQBsig' },
      { type: 'redacted_thinking', data: 'EmwKredacted' },
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
    ]);
    expect(wire.messages[2]!.content).to.deep.equal([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C' },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: 'clock broken', is_error: true },
      { type: 'text', text: 'Thanks' },
    ]);
  });

  it('maps sampling, limits, stop, user, thinking and tools', () => {
    const wire = toAnthropicRequest(
      baseRequest({
        temperature: 0.3, topP: 0.9, topK: 40, maxTokens: 1000, stop: ['END'], user: 'user-42',
        thinking: { budgetTokens: 2048 },
        tools: [
          { name: 'get_weather', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
          { name: 'ping' },
        ],
        toolChoice: 'required', parallelToolCalls: false,
      }),
      'claude-sonnet-4-20250514',
      true,
    );
    expect(wire).to.deep.include({
      max_tokens: 1000, temperature: 0.3, top_p: 0.9, top_k: 40, stop_sequences: ['END'], stream: true,
      metadata: { user_id: 'user-42' },
      thinking: { type: 'enabled', budget_tokens: 2048 },
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
    });
    expect(wire.tools).to.deep.equal([
      { name: 'get_weather', description: 'Weather by city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      { name: 'ping', input_schema: { type: 'object', properties: {} } },
    ]);
  });

  it('defaults max_tokens to 4096, above the thinking budget when that is larger', () => {
    expect(toAnthropicRequest(baseRequest(), 'm', false).max_tokens).to.equal(4096);
    expect(toAnthropicRequest(baseRequest({ thinking: { budgetTokens: 10000 } }), 'm', false).max_tokens).to.equal(14096);
    expect(toAnthropicRequest(baseRequest(), 'm', false)).to.not.have.any.keys('tools', 'tool_choice', 'system', 'metadata', 'thinking');
  });

  it('maps every tool choice', () => {
    expect(toToolChoice('auto', undefined)).to.deep.equal({ type: 'auto' });
    expect(toToolChoice('none', false)).to.deep.equal({ type: 'none' });
    expect(toToolChoice('required', undefined)).to.deep.equal({ type: 'any' });
    expect(toToolChoice({ name: 'get_weather' }, false)).to.deep.equal({ type: 'tool', name: 'get_weather', disable_parallel_tool_use: true });
    expect(toToolChoice(undefined, false)).to.deep.equal({ type: 'auto', disable_parallel_tool_use: true });
    expect(toToolChoice(undefined, true)).to.equal(undefined);
  });

  it('turns a JSON response format into a system instruction (Anthropic has no JSON mode)', () => {
    expect(jsonInstruction({ type: 'text' })).to.equal(undefined);
    expect(jsonInstruction({ type: 'json_object' })).to.match(/valid JSON.*must be a JSON object/);
    const wire = toAnthropicRequest(
      baseRequest({ responseFormat: { type: 'json_schema', name: 'city', schema: { type: 'object', properties: { name: { type: 'string' } } } } }),
      'm',
      false,
    );
    expect(wire.system).to.have.length(1);
    expect(wire.system![0]!.text).to.contain('"city"').and.contain('{"type":"object","properties":{"name":{"type":"string"}}}');
  });

  it('refuses tool-call arguments that are not JSON as the client\'s error', () => {
    const messages: Message[] = [{ role: 'assistant', content: null, toolCalls: [{ id: 't', name: 'f', arguments: '{oops' }] }];
    expect(() => toAnthropicRequest(baseRequest({ messages }), 'm', false)).to.throw(UpstreamError).with.property('kind', 'bad_request');
  });

  it('sends a native body as the client wrote it, with the upstream model and without gateway fields', () => {
    const client = {
      model: 'anthropic/claude-3-5-haiku', max_tokens: 300, top_k: 5, stream: false,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hi' }],
      provider: 'anthropic', router_provider: 'x', router_virtual_key: 'vk', auto_web_search: true,
    };
    expect(nativeBody(client, 'claude-3-5-haiku-20241022', true)).to.deep.equal({
      model: 'claude-3-5-haiku-20241022', max_tokens: 300, top_k: 5, stream: true,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(client.provider).to.equal('anthropic'); // the client's object is not mutated
  });
});

describe('anthropic mapping: wire -> internal', () => {
  const message = {
    id: 'msg_01', type: 'message' as const, role: 'assistant' as const, model: 'claude-sonnet-4-20250514',
    content: [
      { type: 'thinking', thinking: 'Two tools.', signature: 'EqQBsig' },
      { type: 'redacted_thinking', data: 'EmwKredacted' },
      { type: 'text', text: 'Let me ' },
      { type: 'text', text: 'check.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris', days: 2 } },
      { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'x' } },
    ],
    stop_reason: 'tool_use', stop_sequence: null,
    usage: { input_tokens: 100, cache_read_input_tokens: 2000, cache_creation_input_tokens: 300, output_tokens: 50 },
  };

  it('maps content, tool calls, thinking, finish and usage (prompt = input + cache read + cache write)', () => {
    const r = fromAnthropicMessage(message, false);
    expect(r.id).to.equal('msg_01');
    expect(r.model).to.equal('claude-sonnet-4-20250514');
    expect(r.choices).to.deep.equal([
      {
        index: 0,
        content: 'Let me check.',
        toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris","days":2}' }],
        thinking: [{ text: 'Two tools.', signature: 'EqQBsig' }, { text: 'EmwKredacted', redacted: true }],
        finishReason: 'tool_calls',
        stopSequence: null,
      },
    ]);
    expect(r.usage).to.deep.equal({ promptTokens: 2400, completionTokens: 50, cachedTokens: 2000, cacheWriteTokens: 300, reasoningTokens: 0 });
    expect(r).to.not.have.property('anthropicMessage');
    expect(fromAnthropicMessage(message, true).anthropicMessage).to.equal(message);
  });

  it('maps every stop reason', () => {
    expect(mapStopReason('end_turn')).to.equal('stop');
    expect(mapStopReason('stop_sequence')).to.equal('stop');
    expect(mapStopReason('pause_turn')).to.equal('stop');
    expect(mapStopReason('max_tokens')).to.equal('length');
    expect(mapStopReason('tool_use')).to.equal('tool_calls');
    expect(mapStopReason('refusal')).to.equal('content_filter');
    const r = fromAnthropicMessage({ ...message, content: [{ type: 'text', text: '1, 2, ' }], stop_reason: 'stop_sequence', stop_sequence: '3' }, false);
    expect(r.choices[0]).to.include({ content: '1, 2, ', finishReason: 'stop', stopSequence: '3' });
  });

  it('treats missing cache counts as zero and a tool-only answer as null content', () => {
    expect(mapUsage({ input_tokens: 7, output_tokens: 3, cache_read_input_tokens: null })).to.deep.equal({
      promptTokens: 7, completionTokens: 3, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0,
    });
    const r = fromAnthropicMessage({ ...message, content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] }, false);
    expect(r.choices[0]!.content).to.equal(null);
    expect(() => fromAnthropicMessage({ type: 'error' } as never, false)).to.throw(UpstreamError).with.property('kind', 'invalid_response');
  });

  it('maps stream error types to error kinds', () => {
    const kind = (type: string) => anthropicStreamError({ type: 'error', error: { type, message: 'm' } }).kind;
    expect(kind('overloaded_error')).to.equal('server_error');
    expect(kind('rate_limit_error')).to.equal('rate_limited');
    expect(kind('api_error')).to.equal('server_error');
    expect(kind('invalid_request_error')).to.equal('bad_request');
    expect(kind('authentication_error')).to.equal('auth');
    expect(kind('something_new')).to.equal('server_error');
  });
});
