import { expect } from 'chai';
import { openAIRequestJson, parseChatRequest, toOpenAIRequest, type OpenAIWireOptions } from '../../src/wire/openai-chat.js';
import { withStream } from '../../src/engine/types.js';
import { PLAIN_MIN } from '../../src/json-body.js';

/**
 * src/wire/openai-chat.ts: the upstream request's JSON written from its shape must be JSON.stringify(toOpenAIRequest(…))'s
 * text exactly, and left to it (undefined) for every request the shape does not cover.
 */
const WIRES: OpenAIWireOptions[] = [{ maxTokensField: 'max_tokens', exclude: [] }, { maxTokensField: 'max_completion_tokens', exclude: [] }];
const user = (content: unknown, more: Record<string, unknown> = {}) => ({ role: 'user', content, ...more });

/** Each body parsed as a client's, streamed and not, for each wire: [the template's text, JSON.stringify's]. */
function both(body: Record<string, unknown>, wires = WIRES): Array<[string | undefined, string]> {
  const req = parseChatRequest(JSON.parse(JSON.stringify({ model: 'client/model', ...body })));
  const out: Array<[string | undefined, string]> = [];
  for (const wire of wires) {
    for (const stream of [false, true]) {
      const r = withStream(req, stream);
      out.push([openAIRequestJson(r, 'upstream-model', wire), JSON.stringify(toOpenAIRequest(r, 'upstream-model', wire))]);
    }
  }
  return out;
}

describe('unit: openAIRequestJson (the usual upstream request without JSON.stringify)', () => {
  it('writes the benchmark\'s request as JSON.stringify does, key for key', () => {
    const [[plain, plainStringified], [streamed, streamedStringified]] = both({ max_tokens: 64, messages: [user('Say hello to the benchmark.')] });
    expect([plain, streamed]).to.deep.equal([plainStringified, streamedStringified]);
    expect(plain).to.equal('{"model":"upstream-model","messages":[{"role":"user","content":"Say hello to the benchmark."}],"max_tokens":64}');
    expect(streamed).to.equal('{"model":"upstream-model","messages":[{"role":"user","content":"Say hello to the benchmark."}],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true}}');
  });

  it('gives JSON.stringify\'s text for every request of the usual shape: roles, names, every sampling field, text that needs escaping', () => {
    const bodies: Array<Record<string, unknown>> = [
      { messages: [] },
      { messages: [user('')] },
      { messages: [{ role: 'system', content: 'Be brief.' }, user('hi', { name: 'ann' }), { role: 'assistant', content: 'Hello!' }, user('and "then"?')] },
      { messages: [user('héllo "quoted" back\\slash\nline\ttab \u0001 😀 lone \ud800 sep\u2028 </script>', { name: 'o"neil' })] },
      { messages: [user('x'.repeat(300)), user(`${'y'.repeat(400)}"`)] },
      {
        messages: [user('all the fields')], temperature: 0.7, top_p: 1, max_completion_tokens: 100, n: 2, stop: 'END', seed: 42, logprobs: true,
        top_logprobs: 3, frequency_penalty: -0.5, presence_penalty: 0, user: 'u-1',
      },
      { messages: [user('more')], temperature: 1e-7, max_tokens: 1e21, stop: ['a', 'b "c"'], logprobs: false, user: 'ü', stream_options: { include_usage: true } },
    ];
    // the sampling fields' keys and order, pinned (both serialisations read them from one table)
    const [, , [allFields]] = both(bodies[5]);
    expect(allFields).to.equal('{"model":"upstream-model","messages":[{"role":"user","content":"all the fields"}],"temperature":0.7,"top_p":1,'
      + '"max_completion_tokens":100,"n":2,"stop":["END"],"seed":42,"logprobs":true,"top_logprobs":3,"frequency_penalty":-0.5,"presence_penalty":0,"user":"u-1"}');
    let written = 0;
    for (const body of bodies) {
      for (const [template, stringified] of both(body)) {
        expect(template, stringified).to.be.a('string');
        expect(template).to.equal(stringified);
        written++;
      }
    }
    expect(written).to.equal(bodies.length * 4);
  });

  it('leaves every other request to JSON.stringify (undefined): pass-through fields, tools, formats, parts, tool calls, exclusions, large strings', () => {
    const others: Array<Record<string, unknown>> = [
      { messages: [user('hi')], logit_bias: { '50256': -100 } },
      { messages: [user('hi')], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] },
      { messages: [user('hi')], tool_choice: 'none' },
      { messages: [user('hi')], response_format: { type: 'json_object' } },
      { messages: [user([{ type: 'text', text: 'a part' }])] },
      { messages: [user('hi'), { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 'c1', content: '42' }] },
      { messages: [{ role: 'assistant', content: null }] },
      { messages: [user('x'.repeat(PLAIN_MIN))] },
      { messages: [user('hi')], user: 'u'.repeat(PLAIN_MIN) },
      { messages: [user('hi')], stop: ['end', 's'.repeat(PLAIN_MIN)] },
    ];
    for (const body of others) for (const [template] of both(body)) expect(template, JSON.stringify(body).slice(0, 120)).to.equal(undefined);
    // a parameter this upstream drops: the object's own path deletes it
    for (const [template, stringified] of both({ messages: [user('hi')], temperature: 0.5 }, [{ maxTokensField: 'max_tokens', exclude: ['temperature'] }])) {
      expect(template).to.equal(undefined);
      expect(stringified).to.not.include('temperature');
    }
  });
});
