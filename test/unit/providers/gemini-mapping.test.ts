import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { UpstreamError, type Message } from '../../../src/engine/types.js';
import { SKIP_SIGNATURE, toContents, toFunctionCalling, toGeminiRequest } from '../../../src/providers/gemini/request.js';
import { fromGeminiResponse, geminiError, geminiHttpError, mapFinishReason, mapUsage } from '../../../src/providers/gemini/response.js';
import { toGeminiSchema } from '../../../src/providers/gemini/schema.js';
import { baseRequest } from './support.js';

const SCHEMAS = '/work/shared/reference/gemini-recorded/schema';

describe('gemini mapping: internal -> wire', () => {
  const conversation: Message[] = [
    { role: 'system', content: 'You are terse.' },
    { role: 'developer', content: 'Use metric units.' },
    { role: 'user', content: [{ type: 'text', text: 'What is in these?' }, { type: 'image', url: 'data:image/jpeg;base64,/9j/4AAQ' }, { type: 'image', url: 'https://example.com/a/cat.PNG?x=1' }] },
    {
      role: 'assistant',
      content: 'Checking.',
      thinking: [{ text: 'summary', signature: 'gemini:thoughtSig' }, { text: '', signature: 'gemini:callSig' }, { text: 'x', signature: 'EqAnthropicSig' }],
      toolCalls: [
        { id: 'call_0', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { id: 'call_1', name: 'get_time', arguments: '' },
      ],
    },
    { role: 'tool', toolCallId: 'call_0', content: '{"celsius":18}' },
    { role: 'tool', toolCallId: 'call_1', content: 'clock broken', isError: true },
    { role: 'assistant', content: null, toolCalls: [{ id: 'call_0', name: 'get_weather', arguments: '{"city":"Oslo"}' }] },
    { role: 'tool', toolCallId: 'call_0', content: 'rainy' },
  ];

  it('maps system, roles, images, function calls (with signatures) and function responses', () => {
    const wire = toGeminiRequest(baseRequest({ messages: conversation }));
    expect(wire.systemInstruction).to.deep.equal({ parts: [{ text: 'You are terse.' }, { text: 'Use metric units.' }] });
    expect(wire.contents).to.deep.equal([
      {
        role: 'user',
        parts: [
          { text: 'What is in these?' },
          { inlineData: { mimeType: 'image/jpeg', data: '/9j/4AAQ' } },
          { fileData: { mimeType: 'image/png', fileUri: 'https://example.com/a/cat.PNG?x=1' } },
        ],
      },
      {
        role: 'model',
        parts: [
          { text: 'Checking.' },
          // The call's own signature (the empty thinking block), unprefixed, on the first call only.
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'callSig' },
          { functionCall: { name: 'get_time', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { result: { celsius: 18 } } } },
          { functionResponse: { name: 'get_time', response: { error: 'clock broken' } } },
        ],
      },
      // A turn with no Gemini signature gets Google's documented skip value.
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } }, thoughtSignature: SKIP_SIGNATURE }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'rainy' } } }] },
    ]);
    expect(wire).to.not.have.any.keys('tools', 'toolConfig', 'generationConfig');
  });

  it('a tool result that answers no earlier call is the client\'s error', () => {
    const messages: Message[] = [{ role: 'user', content: 'Hi' }, { role: 'tool', toolCallId: 'call_9', content: 'x' }];
    expect(() => toContents(messages)).to.throw(UpstreamError).with.property('kind', 'bad_request');
    // …unless it names the function itself.
    expect(toContents([{ role: 'tool', toolCallId: 'call_9', name: 'f', content: 'x' }])[0]!.parts).to.deep.equal([
      { functionResponse: { name: 'f', response: { result: 'x' } } },
    ]);
  });

  it('maps tools (cleaned schemas), tool choice and the generation config', () => {
    const wire = toGeminiRequest(
      baseRequest({
        tools: [
          {
            name: 'get_weather', description: 'Weather by city', strict: true,
            parameters: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', additionalProperties: false, properties: { city: { type: 'string' } }, required: ['city'] },
          },
          { name: 'now', parameters: { type: 'object', properties: {}, additionalProperties: false } },
        ],
        toolChoice: { name: 'get_weather' },
        temperature: 0.2, topP: 0.8, topK: 20, maxTokens: 256, stop: ['END'], n: 2, seed: 7, presencePenalty: 0.1, frequencyPenalty: 0.3,
        responseFormat: { type: 'json_object' },
        thinking: { budgetTokens: 1024 },
      }),
    );
    expect(wire.tools).to.deep.equal([
      {
        functionDeclarations: [
          { name: 'get_weather', description: 'Weather by city', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] } },
          { name: 'now' },
        ],
      },
    ]);
    expect(wire.toolConfig).to.deep.equal({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
    expect(wire.generationConfig).to.deep.equal({
      temperature: 0.2, topP: 0.8, topK: 20, maxOutputTokens: 256, stopSequences: ['END'], candidateCount: 2, seed: 7,
      presencePenalty: 0.1, frequencyPenalty: 0.3, responseMimeType: 'application/json',
      thinkingConfig: { thinkingBudget: 1024, includeThoughts: true },
    });
  });

  it('maps every tool choice, and json_schema to a response schema', () => {
    expect(toFunctionCalling('auto')).to.deep.equal({ mode: 'AUTO' });
    expect(toFunctionCalling('none')).to.deep.equal({ mode: 'NONE' });
    expect(toFunctionCalling('required')).to.deep.equal({ mode: 'ANY' });
    const wire = toGeminiRequest(baseRequest({ responseFormat: { type: 'json_schema', name: 'c', schema: { type: 'object', properties: { n: { type: ['integer', 'null'] } }, additionalProperties: false } } }));
    expect(wire.generationConfig).to.deep.equal({
      responseMimeType: 'application/json',
      responseSchema: { type: 'OBJECT', properties: { n: { type: 'INTEGER', nullable: true } } },
    });
  });
});

describe('gemini schema cleaning', () => {
  it('maps the recorded JSON Schema to what the recorded OpenAPI schema says of every property', () => {
    const json = JSON.parse(readFileSync(`${SCHEMAS}/json-schema.json`, 'utf8'));
    const openapi = JSON.parse(readFileSync(`${SCHEMAS}/open-api-schema.json`, 'utf8'));
    const out = toGeminiSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema', additionalProperties: false, ...json });
    expect(out).to.not.have.any.keys('$schema', 'additionalProperties');
    expect(out.type).to.equal('OBJECT');
    expect(out.required).to.deep.equal(openapi.required);
    for (const [name, want] of Object.entries<any>(openapi.properties)) {
      const got = out.properties[name];
      expect(got.type, name).to.equal(want.type);
      expect(got.nullable, name).to.equal(want.nullable);
      expect(got.title, name).to.equal(want.title);
      expect(got.enum, name).to.deep.equal(want.enum);
    }
    expect(out.properties.listTest.items.type).to.equal('INTEGER');
    expect(out.properties.objTest.properties.testInt.type).to.equal('INTEGER');
  });

  it('inlines local refs, merges allOf, turns const and oneOf into enum and anyOf, drops unknown keys', () => {
    const out = toGeminiSchema({
      type: 'object',
      $defs: { Unit: { type: 'string', enum: ['c', 'f'] } },
      properties: {
        unit: { $ref: '#/$defs/Unit', description: 'Unit' },
        kind: { const: 'weather' },
        where: { oneOf: [{ type: 'string' }, { type: 'number' }] },
        both: { allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'integer' } } }] },
        free: { type: 'object', patternProperties: { '.*': { type: 'string' } } },
      },
      required: ['unit', 'ghost'],
      strict: true,
    });
    expect(out).to.deep.equal({
      type: 'OBJECT',
      properties: {
        unit: { type: 'STRING', enum: ['c', 'f'], description: 'Unit' },
        kind: { enum: ['weather'], type: 'STRING' },
        where: { anyOf: [{ type: 'STRING' }, { type: 'NUMBER' }] },
        both: { type: 'OBJECT', properties: { a: { type: 'STRING' }, b: { type: 'INTEGER' } }, required: ['a'] },
        free: { type: 'OBJECT' },
      },
      required: ['unit'],
    });
  });

  it('stops inlining a recursive ref instead of looping', () => {
    const out = toGeminiSchema({ $defs: { Node: { type: 'object', properties: { next: { $ref: '#/$defs/Node' } } } }, $ref: '#/$defs/Node' });
    let depth = 0;
    for (let n = out; n?.properties?.next; n = n.properties.next) depth++;
    expect(depth).to.be.within(20, 30);
  });
});

describe('gemini mapping: wire -> internal', () => {
  it('joins text, keeps thoughts apart, numbers calls call_<n> and prefixes signatures', () => {
    const r = fromGeminiResponse(
      {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'Thinking about it', thought: true, thoughtSignature: 'tSig' },
                { text: 'Let me ' },
                { text: 'look.' },
                { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'cSig' },
                { functionCall: { name: 'now' } },
                { executableCode: { language: 'PYTHON', code: 'print(1)' } },
              ],
            },
            finishReason: 'STOP',
          },
        ],
        usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 20, thoughtsTokenCount: 30, cachedContentTokenCount: 60, toolUsePromptTokenCount: 5 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'resp-1',
      },
      'gemini-2.5-flash',
    );
    expect(r.id).to.equal('resp-1');
    expect(r.model).to.equal('gemini-2.5-flash');
    expect(r.choices).to.deep.equal([
      {
        index: 0,
        content: 'Let me look.',
        toolCalls: [
          { id: 'call_0', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { id: 'call_1', name: 'now', arguments: '{}' },
        ],
        thinking: [{ text: 'Thinking about it', signature: 'gemini:tSig' }, { text: '', signature: 'gemini:cSig' }],
        finishReason: 'tool_calls',
      },
    ]);
    // thoughts count as completion (and reasoning); tool-use prompt tokens as prompt; cached is part of prompt.
    expect(r.usage).to.deep.equal({ promptTokens: 105, completionTokens: 50, cachedTokens: 60, cacheWriteTokens: 0, reasoningTokens: 30 });
  });

  it('round-trips a call: the signature it came with goes back on the replayed call', () => {
    const r = fromGeminiResponse({ candidates: [{ content: { parts: [{ functionCall: { name: 'now', args: {} }, thoughtSignature: 'cSig' }] }, finishReason: 'STOP' }] }, 'g');
    const c = r.choices[0]!;
    const back = toContents([{ role: 'assistant', content: c.content, toolCalls: c.toolCalls, thinking: c.thinking }]);
    expect(back).to.deep.equal([{ role: 'model', parts: [{ functionCall: { name: 'now', args: {} }, thoughtSignature: 'cSig' }] }]);
  });

  it('maps finish reasons', () => {
    expect(mapFinishReason('STOP', false)).to.equal('stop');
    expect(mapFinishReason('STOP', true)).to.equal('tool_calls');
    expect(mapFinishReason('MAX_TOKENS', true)).to.equal('length');
    for (const r of ['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII']) expect(mapFinishReason(r, false), r).to.equal('content_filter');
    expect(mapFinishReason('OTHER', false)).to.equal('stop');
    expect(mapUsage({})).to.deep.equal({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });
  });

  it('maps Google error statuses to kinds', () => {
    const kind = (status: string, details?: Array<Record<string, unknown>>) => geminiError({ code: 400, message: 'm', status, details }, 400).kind;
    expect(kind('RESOURCE_EXHAUSTED')).to.equal('rate_limited');
    expect(kind('UNAVAILABLE')).to.equal('server_error');
    expect(kind('INTERNAL')).to.equal('server_error');
    expect(kind('INVALID_ARGUMENT')).to.equal('bad_request');
    expect(kind('INVALID_ARGUMENT', [{ reason: 'API_KEY_INVALID' }])).to.equal('auth');
    expect(kind('PERMISSION_DENIED')).to.equal('auth');
    expect(kind('UNAUTHENTICATED')).to.equal('auth');
    expect(kind('NOT_FOUND')).to.equal('not_found');
    expect(kind('DEADLINE_EXCEEDED')).to.equal('timeout');
    // Google's RetryInfo is the retry delay when no Retry-After header came.
    const e = geminiHttpError(429, {}, JSON.stringify({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'q', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '39s' }] } }));
    expect(e).to.include({ kind: 'rate_limited', status: 429, retryAfterMs: 39000 });
    expect(geminiHttpError(429, { 'retry-after': '3' }, '{"error":{"status":"RESOURCE_EXHAUSTED"}}').retryAfterMs).to.equal(3000);
  });
});
