import { expect } from 'chai';
import { providers } from '../../../src/providers/registry.js';
import { UpstreamError } from '../../../src/engine/types.js';
import { baseRequest, fakeUpstream, targetFor, type FakeUpstream } from './support.js';

/** A chat.completion as OpenAI writes it. */
const completion = (id: string, content: string | null, p: number, c: number, extra: { finish?: string; choice?: object } = {}) => JSON.stringify({
  id, object: 'chat.completion', created: 1764300000 + p, model: 'gpt-4o-2024-08-06',
  choices: [{ index: 0, message: { role: 'assistant', content, refusal: null, annotations: [] }, logprobs: null, finish_reason: extra.finish ?? 'stop', ...extra.choice }],
  usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c, prompt_tokens_details: { cached_tokens: 1, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 2, audio_tokens: 0 } },
  service_tier: 'default', system_fingerprint: 'fp_abc',
});

describe('openai adapter over HTTP: non-streamed answers (local fake upstream)', () => {
  let upstream: FakeUpstream;
  let body = '';
  before(async () => {
    upstream = await fakeUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
  });
  after(() => upstream.close());

  const chat = async (text: string, model = 'gpt-4o') => {
    body = text;
    return providers.openai.chat(baseRequest(), targetFor(upstream.url, model), new AbortController().signal);
  };

  it("maps each answer's own values when later answers of the model are read through its kept shape", async () => {
    const model = `gpt-4o-shapes-${Date.now()}`;
    const answers = [
      completion('chatcmpl-1', 'Hello there.', 9, 4),
      completion('chatcmpl-22', 'Second "answer" \\ with é and 🙂', 11, 12),
      completion('chatcmpl-333', '', 13, 0),
      completion('chatcmpl-4444', 'cut short', 15, 16, { finish: 'length' }),
      completion('chatcmpl-5', 'after the other shape', 17, 18),
    ];
    const results = [];
    for (const a of answers) results.push(await chat(a, model));
    results.forEach((r, i) => {
      const j = JSON.parse(answers[i]!);
      expect(r.id).to.equal(j.id);
      expect(r.created).to.equal(j.created);
      expect(r.model).to.equal('gpt-4o-2024-08-06');
      expect(r.systemFingerprint).to.equal('fp_abc');
      expect(r.choices).to.deep.equal([{ index: 0, content: j.choices[0].message.content, toolCalls: undefined, refusal: null,
        finishReason: i === 3 ? 'length' : 'stop', logprobs: null }]);
      expect(r.usage).to.deep.equal({ promptTokens: j.usage.prompt_tokens, completionTokens: j.usage.completion_tokens, cachedTokens: 1,
        cacheWriteTokens: 0, reasoningTokens: 2 });
    });
    // the results are the caller's own: a later answer did not rewrite an earlier one's values
    expect(results[0]!.choices[0]!.content).to.equal('Hello there.');
    expect(results[0]!.usage!.promptTokens).to.equal(9);
  });

  it('hands on tool calls and logprobs of answers that follow a kept shape, and each answer its own objects', async () => {
    const model = `gpt-4o-tools-${Date.now()}`;
    await chat(completion('chatcmpl-a', 'plain', 1, 1), model);
    const tools = await chat(completion('chatcmpl-b', null, 2, 2, { finish: 'tool_calls', choice: { message: { role: 'assistant', content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] } } }), model);
    expect(tools.choices[0]).to.deep.include({ content: null, finishReason: 'tool_calls', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] });
    const lp = { content: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [] }], refusal: null };
    const first = await chat(completion('chatcmpl-c', 'Hi', 3, 1, { choice: { logprobs: lp } }), model);
    const second = await chat(completion('chatcmpl-d', 'Hi', 4, 1, { choice: { logprobs: lp } }), model);
    const third = await chat(completion('chatcmpl-e', 'Hi', 5, 1, { choice: { logprobs: lp } }), model);
    for (const r of [first, second, third]) expect(r.choices[0]!.logprobs).to.deep.equal(lp);
    (second.choices[0]!.logprobs as { refusal: unknown }).refusal = 'changed by its caller';
    expect(third.choices[0]!.logprobs).to.deep.equal(lp);
  });

  it('answers malformed JSON and an error body as upstream errors', async () => {
    const model = `gpt-4o-bad-${Date.now()}`;
    await chat(completion('chatcmpl-a', 'plain', 1, 1), model);
    const bad = await chat(completion('chatcmpl-b', 'plain', 1, 1).slice(0, -1), model).catch((e: unknown) => e);
    expect(bad).to.be.instanceOf(UpstreamError).and.to.include({ kind: 'invalid_response' });
    const err = await chat(JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }), model).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(UpstreamError).and.to.include({ kind: 'server_error' });
    expect((err as Error).message).to.contain('overloaded');
  });
});
