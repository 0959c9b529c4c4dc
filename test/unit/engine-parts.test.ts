import { expect } from 'chai';
import { Breakers } from '../../src/engine/breaker.js';
import { costOf, worstCaseNano, estimatePromptTokens } from '../../src/engine/pricing.js';
import { Readable } from 'node:stream';
import { openaiEvents, OpenAIStreamMapper } from '../../src/providers/openai/index.js';
import { parseChatRequest, toOpenAIRequest } from '../../src/wire/openai-chat.js';
import { OpenAIChunkWriter, toCompletion } from '../../src/wire/openai-stream.js';
import { UpstreamError, type StreamEvent } from '../../src/engine/types.js';
import { EngineEvents, type StreamEnd } from '../../src/engine/chat.js';
import type { Offer } from '../../src/catalog/types.js';
import { validateChatCompletionRequest } from '../support/openai-schema.js';
import { bodyFrom, bodyOf } from '../support/upstream-body.js';
import { UpstreamBody } from '../../src/providers/http.js';

const offer = (p: Partial<Offer['pricing']> = {}): Offer => ({
  gateway: 'g', upstreamModel: 'm', modelId: 'dev/m', developer: 'dev', name: 'M',
  pricing: { prompt: 1e-6, completion: 2e-6, cacheRead: 0.25e-6, cacheWrite: null, image: null, audioPerMinute: null, ...p },
  contextLength: 8000, maxOutputTokens: 1000,
  capabilities: { tools: true, vision: false, reasoning: false, jsonMode: true, streaming: true }, modalities: { input: ['text'], output: ['text'] },
});

describe('unit: breaker', () => {
  it('opens after the threshold, half-opens after the cool-down for one trial, closes on success', () => {
    let now = 0;
    const b = new Breakers(3, 1000, () => now);
    for (let i = 0; i < 2; i++) b.failure('g', 'm');
    expect(b.allow('g', 'm')).to.equal(true);
    b.failure('g', 'm');
    expect(b.state('g', 'm')).to.equal('open');
    expect(b.allow('g', 'm')).to.equal(false);
    // another pair's breaker is its own, while this one is open
    expect([b.allow('g', 'other'), b.state('g', 'other'), b.allow('other', 'm')]).to.deep.equal([true, 'closed', true]);
    now = 1000;
    expect(b.state('g', 'm')).to.equal('half_open');
    expect(b.allow('g', 'm')).to.equal(true);
    expect(b.allow('g', 'm')).to.equal(false); // only one trial
    b.failure('g', 'm');
    expect(b.state('g', 'm')).to.equal('open');
    now = 2500;
    expect(b.allow('g', 'm')).to.equal(true);
    b.success('g', 'm');
    expect(b.state('g', 'm')).to.equal('closed');
    expect(b.allow('g', 'other')).to.equal(true);
  });
});

describe('unit: pricing', () => {
  it('prices prompt, cached prompt and completion tokens at their own rates, with markup', () => {
    const u = { promptTokens: 1000, completionTokens: 500, cachedTokens: 400, cacheWriteTokens: 0, reasoningTokens: 0 };
    // 600 * 1e-6 + 400 * 0.25e-6 = 0.0007 USD; 500 * 2e-6 = 0.001 USD
    expect(costOf(offer(), u, 1)).to.deep.equal({ inputNano: 700_000, outputNano: 1_000_000, totalNano: 1_700_000 });
    expect(costOf(offer(), u, 1.5).totalNano).to.equal(2_550_000);
    expect(costOf(offer({ cacheRead: null }), u, 1).inputNano).to.equal(1_000_000);
  });

  it('holds the prompt estimate plus every completion token the request may produce', () => {
    const req = parseChatRequest({ model: 'x', messages: [{ role: 'user', content: 'a'.repeat(300) }], max_tokens: 100 });
    const est = estimatePromptTokens(req);
    expect(est).to.equal(Math.ceil((300 + 16) / 3));
    expect(worstCaseNano(offer(), req, 1)).to.equal(Math.round((est * 1e-6 + 100 * 2e-6) * 1e9));
    const noMax = parseChatRequest({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    expect(worstCaseNano(offer(), noMax, 1)).to.equal(Math.round((estimatePromptTokens(noMax) * 1e-6 + 1000 * 2e-6) * 1e9));
    // an estimate made once for several offers gives the same hold
    expect(worstCaseNano(offer(), req, 1, est)).to.equal(worstCaseNano(offer(), req, 1));
    expect(worstCaseNano(offer(), req, 1, 2 * est)).to.equal(Math.round((2 * est * 1e-6 + 100 * 2e-6) * 1e9));
  });
});

describe('unit: OpenAI wire mapping', () => {
  const body = {
    model: 'openai/gpt-4o-mini', stream: true, stream_options: { include_usage: false }, max_tokens: 50, stop: 'END', temperature: 0.2,
    provider: 'openai', router_provider: 'x', auto_web_search: false, custom_vendor_flag: { a: 1 },
    response_format: { type: 'json_schema', json_schema: { name: 'r', schema: { type: 'object' }, strict: true } },
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"q":"x"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
    ],
  };

  it('round-trips a full request; gateway fields never go upstream, unknown fields do; usage is always asked for', () => {
    const req = parseChatRequest(body);
    expect(req).to.include({ model: 'openai/gpt-4o-mini', stream: true, includeUsage: false, maxTokens: 50, temperature: 0.2 });
    expect(req.stop).to.deep.equal(['END']);
    const wire = toOpenAIRequest(req, 'gpt-4o-mini', { maxTokensField: 'max_completion_tokens', exclude: [] });
    expect(wire).to.not.have.any.keys('provider', 'router_provider', 'auto_web_search', 'max_tokens');
    expect(wire).to.include({ model: 'gpt-4o-mini', max_completion_tokens: 50, stream: true });
    expect(wire.stream_options).to.deep.equal({ include_usage: true });
    expect(wire.custom_vendor_flag).to.deep.equal({ a: 1 });
    expect(wire.messages).to.deep.equal(body.messages);
    expect(wire.tools).to.deep.equal(body.tools);
    expect(wire.tool_choice).to.deep.equal(body.tool_choice);
    expect(wire.response_format).to.deep.equal(body.response_format);
    expect(validateChatCompletionRequest(wire).errors).to.deep.equal([]);
  });

  it('reads each sampling field only when the client sent it (a number where one is due), in one order', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const all = parseChatRequest({
      model: 'm', messages, metadata: { k: 'v' }, user: 'u-1', presence_penalty: 0, frequency_penalty: -0.5, top_logprobs: 3, logprobs: false,
      seed: 42, stop: ['a'], n: 2, max_tokens: 10, max_completion_tokens: 100, top_k: 40, top_p: 1, temperature: 0.7, vendor_flag: 1,
    });
    const sampling = ['temperature', 'topP', 'topK', 'maxTokens', 'n', 'stop', 'seed', 'logprobs', 'topLogprobs', 'frequencyPenalty', 'presencePenalty', 'user', 'metadata'];
    expect(Object.keys(all).filter((k) => sampling.includes(k))).to.deep.equal(sampling);
    expect(all).to.include({ temperature: 0.7, topP: 1, topK: 40, maxTokens: 100, n: 2, seed: 42, logprobs: false, topLogprobs: 3, frequencyPenalty: -0.5, presencePenalty: 0, user: 'u-1' });
    expect([all.stop, all.metadata, all.extra]).to.deep.equal([['a'], { k: 'v' }, { vendor_flag: 1 }]);
    // absent, null, or not a number where one is due: no key at all
    const none = parseChatRequest({ model: 'm', messages, temperature: '0.7', top_p: null, max_completion_tokens: null, max_tokens: 'x', seed: null, stop: null, logprobs: null, user: null, metadata: null });
    expect(Object.keys(none).filter((k) => sampling.includes(k))).to.deep.equal([]);
    expect(parseChatRequest({ model: 'm', messages, max_completion_tokens: 'x', max_tokens: 7 }).maxTokens).to.equal(7);
  });

  it('maps an upstream stream: usage riding on a chunk with choices, tool deltas, keep-alives ignored', async () => {
    const lines = [
      { id: 'x', model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
      { id: 'x', model: 'm', choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'f', arguments: '' } }] } }] },
      { id: 'x', model: 'm', choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] } }] },
      { id: 'x', model: 'm', choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 5, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 1 } } },
    ];
    // as an upstream body: SSE bytes in network chunks that cut events anywhere, with a keep-alive comment
    const sse = [...lines.map((l) => `data: ${JSON.stringify(l)}\n\n`), ': keep-alive\n\n', 'data: [DONE]\n\n'].join('');
    const cuts = [0, 7, 60, 61, 200, sse.length];
    const evs: StreamEvent[] = [];
    for await (const e of openaiEvents(bodyOf(...cuts.slice(1).map((c, i) => sse.slice(cuts[i], c))))) evs.push(e);
    expect(evs.map((e) => e.type)).to.deep.equal(['start', 'tool_call_start', 'tool_call_delta', 'text', 'finish', 'usage', 'end']);
    expect(evs[5]).to.deep.include({ usage: { promptTokens: 5, completionTokens: 2, cachedTokens: 1, cacheWriteTokens: 0, reasoningTokens: 0 } });
  });

  describe('text chunks read from a template (no JSON parse per chunk)', () => {
    // An OpenAI-shaped chunk as servers write it (fixed field order; `usage: null` until the last chunk).
    const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1,
      model: 'chunks-20', system_fingerprint: 'fp', choices: [{ index: 0, delta, logprobs: null, finish_reason: null }], usage: null, ...extra });
    const texts = (evs: StreamEvent[]) => evs.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text);
    /** Runs `datas` through a mapper, counting JSON.parse calls made meanwhile. */
    function run(datas: string[]) {
      const m = new OpenAIStreamMapper();
      const parse = JSON.parse;
      let parses = 0;
      JSON.parse = ((...a: Parameters<typeof parse>) => { parses++; return parse(...a); }) as typeof parse;
      try {
        const out: StreamEvent[] = [];
        for (const d of datas) out.push(...m.map(d));
        return { out, parses };
      } finally {
        JSON.parse = parse;
      }
    }

    it('gives the same events as parsing, for texts with quotes, escapes, unicode and strings found elsewhere in the chunk', () => {
      const words = ['Hello', ' world', ' "quoted"', ' back\\slash', ' é ü 漢字 🙂', ' line\nbreak', ' tab\t', ' \u2028', '', 'chunks-20', 'chatcmpl-1', 'fp', ' end'];
      const datas = [chunk({ role: 'assistant', content: '' }), ...words.map((w) => chunk({ content: w })),
        JSON.stringify({ id: 'chatcmpl-1', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null }),
        JSON.stringify({ id: 'chatcmpl-1', choices: [], usage: { prompt_tokens: 3, completion_tokens: 13 } })];
      const { out } = run(datas);
      expect(out[0]).to.deep.equal({ type: 'start', id: 'chatcmpl-1', model: 'chunks-20' });
      expect(texts(out)).to.deep.equal(words.filter(Boolean));
      expect(out.filter((e) => e.type === 'text').every((e) => (e as { index: number }).index === 0)).to.equal(true);
      expect(out.slice(-2).map((e) => e.type)).to.deep.equal(['finish', 'usage']);
    });

    it('parses only the chunks that are not plain text deltas of the same shape', () => {
      const words = Array.from({ length: 18 }, (_, i) => ` w${i}`);
      const datas = [chunk({ role: 'assistant', content: '' }), ...words.map((w) => chunk({ content: w })), chunk({}, { choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] })];
      const { out, parses } = run(datas);
      expect(texts(out)).to.deep.equal(words);
      // the role chunk, the first text (plus its template check) and the finish chunk; not the 17 texts after
      expect(parses).to.equal(4);
    });

    it('decodes escapes the upstream chose, and falls back to the parse for anything but one string literal', () => {
      const [pre, post] = chunk({ content: '\u0000' }).split('"\\u0000"');
      const raw = (lit: string) => `${pre}${lit}${post}`;
      const { out } = run([chunk({ role: 'assistant', content: '' }), raw('"a"'), raw('"caf\\u00e9 \\/ \\"x\\""'), raw('"b","refusal":"c"'), raw('"d"')]);
      expect(texts(out)).to.deep.equal(['a', 'café / "x"', 'b', 'd']);
      // a raw control character is not JSON: the stream is broken, as when every chunk was parsed
      const m = new OpenAIStreamMapper();
      m.map(chunk({ role: 'assistant', content: '' }));
      m.map(raw('"a"'));
      expect(() => m.map(raw('"x\u0001y"'))).to.throw(UpstreamError).with.property('kind', 'stream_broken');
    });

    it('learns no template from a literal found in the wrong place: a text equal to the id, an upstream escaping its text', () => {
      // The text equals the id: its literal appears twice, so the chunk is not taken as a template; the next one is.
      const first = run([chunk({ role: 'assistant', content: '' }), chunk({ content: 'chatcmpl-1' }), chunk({ content: 'x' }), chunk({ content: 'y' })]);
      expect(texts(first.out)).to.deep.equal(['chatcmpl-1', 'x', 'y']);
      // The upstream writes "A" as "\u0041": the literal JSON.stringify gives ("A") is only the model's value. A
      // template split there would read the next chunk's model as its text; the probe check refuses it.
      const escaped = (model: string) => `{"id":"c","model":"${model}","choices":[{"index":0,"delta":{"content":"\\u0041"}}]}`;
      const second = run([chunk({ role: 'assistant', content: '' }), escaped('A'), escaped('Z')]);
      expect(texts(second.out)).to.deep.equal(['A', 'A']);
    });

    it('keeps every event of other shapes: a second choice, tool calls, usage riding on a text chunk, a field that varies per chunk', () => {
      const two = (i: number, text: string) => JSON.stringify({ id: 'c', choices: [{ index: 0, delta: {} }, { index: 1, delta: { content: text } }] });
      const { out } = run([chunk({ role: 'assistant', content: '' }), two(1, 'x'), two(1, 'y'), chunk({ content: 'z' }),
        chunk({ content: 'z2' }, { usage: { prompt_tokens: 1, completion_tokens: 2 } }),
        chunk({ content: 'q', tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] }),
        ...['o1', 'o2', 'o3'].map((w, i) => chunk({ content: w }, { obfuscation: 'x'.repeat(i + 1) }))]);
      expect(out.filter((e) => e.type === 'text').map((e) => [(e as { index: number }).index, (e as { text: string }).text]))
        .to.deep.equal([[1, 'x'], [1, 'y'], [0, 'z'], [0, 'z2'], [0, 'q'], [0, 'o1'], [0, 'o2'], [0, 'o3']]);
      expect(out.filter((e) => e.type === 'usage')).to.have.length(1);
      expect(out.filter((e) => e.type === 'tool_call_start' || e.type === 'tool_call_delta').map((e) => e.type)).to.deep.equal(['tool_call_start', 'tool_call_delta']);
    });
  });

  it('a stream without [DONE] or with malformed JSON is broken', async () => {
    const cut = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a' } }] })}\n\n`;
    const bad = 'data: {"choices": [\n\n';
    for (const text of [cut, bad]) {
      const err = await (async () => { try { for await (const _ of openaiEvents(bodyOf(text))) { /* drain */ } } catch (e) { return e; } })();
      expect(err).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
    }
  });

  it('delivers the events before a failure, then the failure; reads nothing after [DONE]; an early stop lets go of the body', async () => {
    const data = (text: string) => `data: ${JSON.stringify({ id: 'x', model: 'm', choices: [{ index: 0, delta: { content: text } }] })}\n\n`;
    const collect = async (chunks: string[]) => {
      const evs: StreamEvent[] = [];
      try {
        for await (const e of openaiEvents(bodyOf(...chunks))) evs.push(e);
        return { evs, err: undefined };
      } catch (err) {
        return { evs, err };
      }
    };
    // malformed JSON after two good events in the same network chunk
    const bad = await collect([data('a') + data('b') + 'data: {"choices": [\n\n']);
    expect(bad.evs.map((e) => e.type === 'text' ? e.text : e.type)).to.deep.equal(['start', 'a', 'b']);
    expect(bad.err).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
    // what follows [DONE] is not read as events; `end` closes the stream
    const done = await collect([data('a'), 'data: [DONE]\n\n' + data('after')]);
    expect(done.err).to.equal(undefined);
    expect(done.evs.map((e) => e.type === 'text' ? e.text : e.type)).to.deep.equal(['start', 'a', 'end']);
    // a consumer that stops early: the body (still open upstream) is let go, and the iterator is done
    const source = new Readable({ read() {} });
    source.push(Buffer.from(data('a')));
    const { body, flow } = bodyFrom(source);
    const it = openaiEvents(body);
    expect((await it.next()).value).to.deep.include({ type: 'start' });
    expect((await it.next()).value).to.deep.include({ type: 'text', text: 'a' });
    expect(await it.return!()).to.deep.equal({ value: undefined, done: true });
    expect(await it.next()).to.deep.equal({ value: undefined, done: true });
    source.push(Buffer.alloc(300 * 1024)); // let go: read off up to 256 KB, then the call is aborted
    await new Promise((r) => setImmediate(r));
    expect(flow.aborted, 'the body is let go').to.be.instanceOf(Error);
  });

  it('reads chunks as they come: a waiting next() woken by the chunk, a piece that makes no event waits on, a large backlog paused and resumed', async () => {
    const data = (text: string) => `data: ${JSON.stringify({ id: 'x', model: 'm', choices: [{ index: 0, delta: { content: text } }] })}\n\n`;
    const flow = { pauses: 0, resumes: 0, pause() { flow.pauses++; }, resume() { flow.resumes++; }, abort() {} };
    const body = new UpstreamBody(flow);
    const it = openaiEvents(body);
    const first = it.next();
    const second = it.next(); // taken after the first, as one reader takes them
    const half = data('a');
    body.push(Buffer.from(half.slice(0, 20))); // no complete event yet: the first next() waits on
    await Promise.resolve();
    body.push(Buffer.from(half.slice(20) + data('b')));
    expect((await first).value).to.deep.include({ type: 'start' });
    expect((await second).value).to.deep.include({ type: 'text', text: 'a' });
    expect((await it.next()).value).to.deep.include({ type: 'text', text: 'b' });
    // 20 chunks arrive while nobody reads: a few KB wait, the upstream is not paused
    for (let i = 0; i < 20; i++) body.push(Buffer.from(data(String(i))));
    expect(flow.pauses).to.equal(0);
    const texts: string[] = [];
    for (let i = 0; i < 20; i++) texts.push(((await it.next()).value as { text: string }).text);
    expect(texts).to.deep.equal(Array.from({ length: 20 }, (_, i) => String(i)));
    // 300 arrive: the upstream is paused at 256 unread chunks, resumed once the reader has taken them below 64
    for (let i = 0; i < 300; i++) body.push(Buffer.from(data(`x${i}`)));
    expect(flow.pauses).to.equal(1);
    const more: string[] = [];
    for (let i = 0; i < 300; i++) more.push(((await it.next()).value as { text: string }).text);
    expect(more).to.deep.equal(Array.from({ length: 300 }, (_, i) => `x${i}`));
    expect(flow.pauses).to.equal(1);
    expect(flow.resumes).to.equal(1);
    const last = it.next();
    body.push(Buffer.from('data: [DONE]\n\n'));
    expect((await last).value).to.deep.equal({ type: 'end' });
    body.end();
    expect(await it.next()).to.deep.equal({ value: undefined, done: true });
  });

  it('writes OpenAI chunks: role first, usage chunk only when asked, then [DONE]', () => {
    const w = new OpenAIChunkWriter('chatcmpl-1', 'dev/m', 1, true);
    const frames = [w.write({ type: 'start', id: 'u', model: 'm' }), w.write({ type: 'text', index: 0, text: 'Hi' }),
      w.write({ type: 'finish', index: 0, finishReason: 'stop' }), w.write({ type: 'usage', usage: { promptTokens: 3, completionTokens: 1, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 } }), w.end({ gateway: 'g' })].join('');
    const datas = frames.split('\n\n').filter(Boolean).map((f) => f.replace(/^data: /, ''));
    expect(datas.at(-1)).to.equal('[DONE]');
    const chunks = datas.slice(0, -1).map((d) => JSON.parse(d));
    expect(chunks[0].choices[0].delta).to.deep.equal({ role: 'assistant', content: '' });
    expect(chunks[1].choices[0].delta).to.deep.equal({ content: 'Hi' });
    expect(chunks[2].choices[0]).to.include({ finish_reason: 'stop' });
    expect(chunks[3]).to.deep.include({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } } });
    const noUsage = new OpenAIChunkWriter('c', 'm', 1, false);
    noUsage.write({ type: 'usage', usage: { promptTokens: 3, completionTokens: 1, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 } });
    expect(noUsage.end({})).to.equal('data: [DONE]\n\n');
  });

  it('the role, text and finish frames made without JSON.stringify are the bytes the generic chunk gives', () => {
    const generic = (id: string, model: string, created: number, index: number, delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    for (const [id, model] of [['chatcmpl-1', 'dev/m'], ['chatcmpl-"q"', 'vendor/ünï\\code']]) {
      const w = new OpenAIChunkWriter(id, model, 1700000000, false);
      expect(w.write({ type: 'start', id: 'u', model: 'm' })).to.equal(generic(id, model, 1700000000, 0, { role: 'assistant', content: '' }, null));
      for (const text of ['Hi', 'say "hi"\n', '😀', 'x'.repeat(300)]) {
        expect(w.write({ type: 'text', index: 0, text })).to.equal(generic(id, model, 1700000000, 0, { content: text }, null));
      }
      for (const reason of ['stop', 'length', 'tool_calls', 'content_filter'] as const) {
        expect(w.write({ type: 'finish', index: 0, finishReason: reason })).to.equal(generic(id, model, 1700000000, 0, {}, reason));
      }
      // a second choice: its first frame carries the role (the generic path), later ones the fast frames
      expect(w.write({ type: 'text', index: 1, text: 'b' })).to.equal(generic(id, model, 1700000000, 1, { role: 'assistant', content: 'b' }, null));
      expect(w.write({ type: 'finish', index: 1, finishReason: 'stop' })).to.equal(generic(id, model, 1700000000, 1, {}, 'stop'));
    }
    // a finish before any text: the role rides on it
    const early = new OpenAIChunkWriter('c', 'm', 1, false);
    expect(early.write({ type: 'finish', index: 0, finishReason: 'length' })).to.equal(generic('c', 'm', 1, 0, { role: 'assistant' }, 'length'));
  });

  it('a completion carries null content with tool calls', () => {
    const c = toCompletion({ id: 'a', model: 'm', created: 1, usage: { promptTokens: 1, completionTokens: 1, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
      choices: [{ index: 0, content: null, toolCalls: [{ id: 't', name: 'f', arguments: '{}' }], finishReason: 'tool_calls' }] }, 'dev/m', {});
    expect(c.choices[0].message).to.deep.equal({ role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }] });
  });
});

const SSE_PATHS = ['through res.write (a head not flushed by startSse)', 'written to the socket directly (startSse)'] as const;

/**
 * A stream to a raw client that sent its request and does not read the answer until it is resumed: `fn` gets the
 * stream's SseOut (made by `startSse`, or by hand after `writeHead` so that `res.write` writes), the response and
 * the client.
 */
async function toNonReadingClient(how: typeof SSE_PATHS[number], fn: (out: import('../../src/engine/respond.js').SseOut, res: import('node:http').ServerResponse, client: import('node:net').Socket) => Promise<void>): Promise<void> {
  const { SseOut, startSse } = await import('../../src/engine/respond.js');
  const http = await import('node:http');
  const net = await import('node:net');
  let served: (res: import('node:http').ServerResponse) => void = () => {};
  const got = new Promise<import('node:http').ServerResponse>((r) => (served = r));
  const server = http.createServer((_req, res) => served(res)).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const client = net.connect((server.address() as import('node:net').AddressInfo).port, '127.0.0.1');
  client.pause();
  client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  const res = await got;
  try {
    let out: InstanceType<typeof SseOut>;
    if (how === SSE_PATHS[0]) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      out = new SseOut(res);
    } else out = startSse(res, {});
    await fn(out, res, client);
  } finally {
    client.destroy();
    res.destroy();
    await new Promise((r) => server.close(r));
  }
}

describe('unit: SSE frames to a slow reader', () => {
  for (const how of SSE_PATHS) it(`writeFrame hands back a promise only when the socket is full, settled once the reader has drained it: ${how}`, async () => {
    const { writeFrame } = await import('../../src/engine/respond.js');
    await toNonReadingClient(how, async (out, _res, client) => {
      const frame = `data: ${'x'.repeat(256 * 1024)}\n\n`;
      expect(writeFrame(out, 'data: {"small":true}\n\n'), 'room in the socket: nothing to wait for').to.equal(undefined);
      // Frames go on until one's promise stays pending: the kernel's buffers too are full.
      let stuck: Promise<void> | undefined;
      let waits = 0;
      for (let i = 0; i < 4000 && !stuck; i++) {
        const full = writeFrame(out, frame);
        if (!full) continue;
        waits++;
        const drained = await Promise.race([full.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 200))]);
        if (!drained) stuck = full;
      }
      expect(waits, 'a frame over the stream\'s buffer hands back a promise').to.be.greaterThan(0);
      expect(stuck, 'the reader does not read: the socket stays full').to.be.instanceOf(Promise);
      let drained = false;
      void stuck!.then(() => { drained = true; });
      await new Promise((r) => setTimeout(r, 50));
      expect(drained, 'still full while nobody reads').to.equal(false);
      client.resume();
      await stuck;
      expect(drained).to.equal(true);
    });
  });
});

describe('unit: SSE small frames, one per tick, to a reader that does not read', () => {
  for (const how of SSE_PATHS) it(`writeFrame hands back a promise once the socket is full, not a frame after it: ${how}`, async () => {
    const { writeFrame } = await import('../../src/engine/respond.js');
    await toNonReadingClient(how, async (out, res, client) => {
      const frame = `data: ${'y'.repeat(1024)}\n\n`;
      let full: Promise<void> | void = undefined;
      let sent = 0;
      // one frame a tick, as a paced upstream's chunks come, until writeFrame says to wait (at most 64 MB)
      for (; sent < 64 * 1024 && !full; sent++) {
        full = writeFrame(out, frame, true);
        await new Promise((r) => setImmediate(r));
      }
      expect(full, 'a promise before 64 MB were taken').to.be.instanceOf(Promise);
      const buffered = res.socket!.writableLength;
      expect(buffered, 'what waits in the socket\'s buffer').to.be.lessThan(1024 * 1024);
      client.resume();
      await full;
    });
  });
});

describe('unit: SSE frames of one tick leave together, frames of a later tick at once', () => {
  it('a tick\'s frames are one chunk of the body; frames made in a later tick are chunks of their own, sent at that tick\'s end, not with the end', async () => {
    const { startSse, writeFrame, endSse } = await import('../../src/engine/respond.js');
    const http = await import('node:http');
    const net = await import('node:net');
    const frame = (i: number) => `data: {"n":${i},"pad":"${'x'.repeat(100)}"}\n\n`;
    let endCalledAt = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      const out = startSse(res, { 'X-Test': '1' });
      for (let i = 0; i < 24; i++) writeFrame(out, frame(i));
      setTimeout(() => {
        writeFrame(out, frame(24));
        // over JOIN_LIMIT in one tick: written in parts as the limit is reached, nothing lost or reordered
        for (let i = 25; i < 25 + 200; i++) writeFrame(out, frame(i));
        setTimeout(() => { endCalledAt = Date.now(); endSse(out); }, 80);
      }, 80);
    }).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const client = net.connect((server.address() as import('node:net').AddressInfo).port, '127.0.0.1');
      client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      let raw = '';
      let lateAt = 0;
      await new Promise<void>((resolve, reject) => {
        client.on('data', (d) => {
          raw += d.toString('latin1');
          if (!lateAt && raw.includes('"n":24,')) lateAt = Date.now();
          if (raw.endsWith('\r\n0\r\n\r\n')) resolve();
        });
        client.on('error', reject);
      });
      client.destroy();
      const [head, body] = [raw.slice(0, raw.indexOf('\r\n\r\n')), raw.slice(raw.indexOf('\r\n\r\n') + 4)];
      expect(head).to.match(/^HTTP\/1\.1 200 OK/).and.match(/transfer-encoding: chunked/i).and.match(/x-test: 1/i);
      // the chunked body, chunk by chunk
      const chunks: string[] = [];
      for (let at = 0; ;) {
        const eol = body.indexOf('\r\n', at);
        const size = parseInt(body.slice(at, eol), 16);
        if (size === 0) break;
        chunks.push(body.slice(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
      expect(chunks[0], 'the first tick: 24 frames in one chunk').to.equal(Array.from({ length: 24 }, (_, i) => frame(i)).join(''));
      expect(chunks.slice(1).join(''), 'every later frame, in order').to.equal(Array.from({ length: 201 }, (_, i) => frame(24 + i)).join(''));
      expect(chunks.length, 'the second tick (~25 KB) in parts of at most ~16 KB').to.be.within(3, 4);
      for (const c of chunks) expect(c.length).to.be.lessThan(16 * 1024 + frame(0).length);
      expect(endCalledAt - lateAt, 'the later tick\'s frames left at its end, not with the end of the stream').to.be.greaterThan(40);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

/** A chunked body's chunks, from the raw bytes after the head (ends at the zero chunk). */
function chunksOf(body: string): string[] {
  const chunks: string[] = [];
  for (let at = 0; ;) {
    const eol = body.indexOf('\r\n', at);
    const size = parseInt(body.slice(at, eol), 16);
    if (!(size > 0)) break;
    chunks.push(body.slice(eol + 2, eol + 2 + size));
    expect(body.slice(eol + 2 + size, eol + 4 + size), 'a chunk ends with a line end').to.equal('\r\n');
    at = eol + 2 + size + 2;
  }
  return chunks;
}

/**
 * Serves `handler` and sends `request` from a raw socket; the bytes that came back (latin1: a byte a character), once
 * `done` says so or the server closed the connection.
 */
async function rawExchange(handler: import('node:http').RequestListener, request: string, done: (raw: string) => boolean = (raw) => raw.endsWith('\r\n0\r\n\r\n')): Promise<string> {
  const http = await import('node:http');
  const net = await import('node:net');
  const server = http.createServer((req, res) => { req.resume(); handler(req, res); }).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    const client = net.connect((server.address() as import('node:net').AddressInfo).port, '127.0.0.1');
    client.write(request);
    let raw = '';
    await new Promise<void>((resolve, reject) => {
      client.on('data', (d) => { raw += d.toString('latin1'); if (done(raw)) resolve(); });
      client.on('end', resolve);
      client.on('error', reject);
    });
    client.destroy();
    return raw;
  } finally {
    await new Promise((r) => server.close(r));
  }
}

const GET = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
const headOf = (raw: string) => raw.slice(0, raw.indexOf('\r\n\r\n'));
const bodyOfRaw = (raw: string) => raw.slice(raw.indexOf('\r\n\r\n') + 4);

describe('unit: SSE chunks written to the socket as one piece', () => {
  const frame = (i: number) => `data: {"n":${i}}\n\n`;

  it('a later tick\'s frames are one socket write of one piece (not a writev of four), and the body is the same chunks', async () => {
    const { startSse, writeFrame, endSse } = await import('../../src/engine/respond.js');
    const writes: string[] = [];
    const raw = await rawExchange((_req, res) => {
      const out = startSse(res, {});
      const socket = res.socket as import('node:net').Socket & { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
      const write = socket._write;
      const writev = socket._writev;
      socket._write = function (this: unknown, ...a: unknown[]) { writes.push('write'); return write.apply(this, a); };
      socket._writev = function (this: unknown, ...a: unknown[]) { writes.push(`writev of ${(a[0] as unknown[]).length}`); return writev.apply(this, a); };
      writeFrame(out, frame(0), true);
      let i = 1;
      const tick = () => {
        if (i < 4) {
          writeFrame(out, frame(i++), true);
          setTimeout(tick, 20);
        } else {
          writeFrame(out, frame(i), true);
          endSse(out);
        }
      };
      setTimeout(tick, 20);
    }, GET);
    expect(headOf(raw)).to.match(/transfer-encoding: chunked/i);
    expect(chunksOf(bodyOfRaw(raw)), 'one chunk per tick, in order').to.deep.equal([0, 1, 2, 3, 4].map(frame));
    // the head and the first tick's chunk leave together; each later tick is one piece; the end is the last chunk
    // and the terminator together
    expect(writes).to.deep.equal(['writev of 2', 'write', 'write', 'write', 'writev of 2']);
  });

  it('a frame with characters past ASCII: the chunk\'s size counts its UTF-8 bytes', async () => {
    const { startSse, writeFrame, endSse } = await import('../../src/engine/respond.js');
    const wide = 'data: {"text":"héllo → 世界 🎉"}\n\n';
    const raw = await rawExchange((_req, res) => {
      const out = startSse(res, {});
      writeFrame(out, frame(0), true);
      setTimeout(() => {
        writeFrame(out, wide);
        setTimeout(() => { writeFrame(out, wide); endSse(out); }, 20);
      }, 20);
    }, GET);
    // sizes count bytes: the body read byte for byte, each chunk decoded as UTF-8
    const chunks = chunksOf(bodyOfRaw(raw)).map((c) => Buffer.from(c, 'latin1').toString('utf8'));
    expect(chunks).to.deep.equal([frame(0), wide, wide]);
  });

  it('pipelined requests: the second stream, made while the first holds the socket, comes after it whole, and both are well framed', async () => {
    const { startSse, writeFrame, endSse } = await import('../../src/engine/respond.js');
    const raw = await rawExchange((req, res) => {
      const name = req.url!.slice(1);
      const out = startSse(res, {});
      writeFrame(out, `data: ${name} 0\n\n`, true);
      let i = 1;
      const tick = () => {
        writeFrame(out, `data: ${name} ${i++}\n\n`, true);
        if (i < 4) setTimeout(tick, name === 'first' ? 30 : 5);
        else endSse(out);
      };
      setTimeout(tick, name === 'first' ? 30 : 5);
    }, 'GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n', (r) => (r.match(/\r\n0\r\n\r\n/g) ?? []).length === 2);
    const responses = raw.split(/(?=HTTP\/1\.1 200 OK)/);
    expect(responses).to.have.length(2);
    for (const [k, name] of ['first', 'second'].entries()) {
      expect(chunksOf(bodyOfRaw(responses[k])).join(''), name).to.equal([0, 1, 2, 3].map((i) => `data: ${name} ${i}\n\n`).join(''));
    }
  });

  it('a head not yet flushed (an SseOut made by hand after writeHead): the frames go through res.write, after the head', async () => {
    const { SseOut, writeFrame, endSse } = await import('../../src/engine/respond.js');
    const raw = await rawExchange((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const out = new SseOut(res);
      writeFrame(out, frame(0), true);
      setTimeout(() => { writeFrame(out, frame(1), true); endSse(out); }, 20);
    }, GET);
    expect(raw).to.match(/^HTTP\/1\.1 200 OK\r\n/);
    expect(chunksOf(bodyOfRaw(raw))).to.deep.equal([frame(0), frame(1)]);
  });

  it('an HTTP/1.0 client (no chunked encoding): the frames as they are, then the connection closes', async () => {
    const { startSse, writeFrame, endSse } = await import('../../src/engine/respond.js');
    const raw = await rawExchange((_req, res) => {
      const out = startSse(res, {});
      writeFrame(out, frame(0), true);
      setTimeout(() => { writeFrame(out, frame(1), true); setTimeout(() => { writeFrame(out, frame(2), true); endSse(out); }, 20); }, 20);
    }, 'GET / HTTP/1.0\r\nHost: x\r\n\r\n', () => false); // until the server closes the connection
    expect(headOf(raw)).to.not.match(/transfer-encoding/i);
    expect(bodyOfRaw(raw)).to.equal([0, 1, 2].map(frame).join(''));
  });
});

describe('unit: SSE frames said to be ASCII are written as latin1, the others as UTF-8', () => {
  it('a tick of ASCII frames, a tick mixing in a frame with letters past ASCII, and the end: the body is every frame\'s UTF-8, in order', async () => {
    const { startSse, writeFrame, endSse } = await import('../../src/engine/respond.js');
    const http = await import('node:http');
    const ascii = (i: number) => `data: {"n":${i}}\n\n`;
    const wide = 'data: {"text":"héllo → 世界 🎉"}\n\n';
    const server = http.createServer((req, res) => {
      req.resume();
      const out = startSse(res, {});
      for (let i = 0; i < 3; i++) writeFrame(out, ascii(i), true);
      setTimeout(() => {
        writeFrame(out, ascii(3), true);
        writeFrame(out, wide); // not said to be ASCII: the whole tick goes as UTF-8
        writeFrame(out, ascii(4), true);
        setTimeout(() => {
          writeFrame(out, ascii(5), true);
          endSse(out);
        }, 20);
      }, 20);
    }).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}/`);
      const body = Buffer.from(await res.arrayBuffer());
      const want = [ascii(0), ascii(1), ascii(2), ascii(3), wide, ascii(4), ascii(5)].join('');
      expect(body.equals(Buffer.from(want, 'utf8'))).to.equal(true);
      expect(body.toString('utf8')).to.equal(want);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('unit: the engine\'s stream events (settle or release exactly once, at the end)', () => {
  type End = StreamEnd;
  type Make = (first: IteratorResult<StreamEvent>, step: () => Promise<IteratorResult<StreamEvent>>, mapError: (e: unknown) => unknown,
    close: (end: End) => Promise<void>) => AsyncIterableIterator<StreamEvent>;
  /** The async generator EngineEvents replaced (src/engine/chat.ts before session 10): both must keep the same rules. */
  const generator: Make = (first, step, mapError, close) => (async function* () {
    let usage = null as End['usage'];
    let chars = 0;
    let ended = false;
    let failed = false;
    let failure: unknown;
    try {
      let s = first;
      while (!s.done) {
        const ev = s.value;
        if (ev.type === 'usage') usage = ev.usage;
        else if (ev.type === 'text' || ev.type === 'thinking') chars += ev.text.length;
        else if (ev.type === 'tool_call_delta') chars += ev.arguments.length;
        else if (ev.type === 'end') ended = true;
        yield ev;
        s = await step();
      }
      if (!ended) throw new UpstreamError('stream_broken', 'upstream stream ended without its terminator');
    } catch (err) {
      failed = true;
      failure = mapError(err);
      throw failure;
    } finally {
      await close({ ended, failed, failure, usage, chars });
    }
  })();

  const usage = { promptTokens: 3, completionTokens: 2, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
  const evs: StreamEvent[] = [{ type: 'start' }, { type: 'text', index: 0, text: 'Hel' }, { type: 'text', index: 0, text: 'lo' },
    { type: 'finish', index: 0, finishReason: 'stop' }, { type: 'usage', usage }, { type: 'end' }] as StreamEvent[];
  /** An upstream handing on `list`, then done, or then failing with `err`. */
  const upstream = (list: StreamEvent[], err?: Error) => {
    let i = 1;
    return {
      first: (list.length ? { done: false, value: list[0] } : { done: true, value: undefined }) as IteratorResult<StreamEvent>,
      step: () => (i < list.length ? Promise.resolve({ done: false, value: list[i++] } as IteratorResult<StreamEvent>)
        : err ? Promise.reject(err) : Promise.resolve({ done: true, value: undefined } as IteratorResult<StreamEvent>)),
    };
  };
  /** A close that records its calls and finishes only when told to. */
  const closer = () => {
    const calls: End[] = [];
    let finish!: () => void;
    const gate = new Promise<void>((r) => (finish = r));
    return { calls, finish, close: async (end: End) => { calls.push(end); await gate; } };
  };
  const settled = async (p: Promise<unknown>) => {
    let is = false;
    void p.then(() => (is = true), () => (is = true));
    for (let i = 0; i < 20; i++) await Promise.resolve();
    return is;
  };
  const mapError = (e: unknown) => (e instanceof Error && e.message === 'secret' ? new UpstreamError('connection', 'redacted') : e);

  for (const [name, make] of [['EngineEvents', (...a: Parameters<Make>) => new EngineEvents(...a)], ['the async generator it replaced', generator]] as [string, Make][]) {
    describe(name, () => {
      it('hands on every event; the end is reported once the settle (close) has finished, and only once', async () => {
        const up = upstream(evs);
        const c = closer();
        const it = make(up.first, up.step, mapError, c.close);
        const got: StreamEvent[] = [];
        for (let i = 0; i < evs.length; i++) got.push((await it.next()).value as StreamEvent);
        expect(got).to.deep.equal(evs);
        const last = it.next();
        expect(await settled(last), 'done waits for the settle').to.equal(false);
        expect(c.calls).to.deep.equal([{ ended: true, failed: false, failure: undefined, usage, chars: 5 }]);
        c.finish();
        expect(await last).to.deep.include({ done: true });
        expect(await it.next()).to.deep.include({ done: true });
        expect(await it.return!()).to.deep.include({ done: true });
        expect(c.calls).to.have.length(1);
      });

      it('an upstream that ends without its terminator is stream_broken, reported after the release', async () => {
        const up = upstream(evs.slice(0, 3));
        const c = closer();
        const it = make(up.first, up.step, mapError, c.close);
        for (let i = 0; i < 3; i++) await it.next();
        const last = it.next();
        expect(await settled(last)).to.equal(false);
        c.finish();
        const err = await last.then(() => undefined, (e) => e);
        expect(err).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
        expect(c.calls).to.deep.equal([{ ended: false, failed: true, failure: err, usage: null, chars: 5 }]);
        expect(await it.next()).to.deep.include({ done: true });
      });

      it('no event at all is stream_broken too', async () => {
        const up = upstream([]);
        const c = closer();
        c.finish();
        const it = make(up.first, up.step, mapError, c.close);
        const err = await it.next().then(() => undefined, (e) => e);
        expect(err).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
        expect(c.calls).to.have.length(1);
      });

      it('a failing upstream: the consumer sees mapError\'s error, the close sees it as the failure', async () => {
        const up = upstream(evs.slice(0, 2), new Error('secret'));
        const c = closer();
        c.finish();
        const it = make(up.first, up.step, mapError, c.close);
        await it.next();
        await it.next();
        const err = await it.next().then(() => undefined, (e) => e);
        expect(err).to.be.instanceOf(UpstreamError).with.property('message', 'redacted');
        expect(c.calls).to.deep.equal([{ ended: false, failed: true, failure: err, usage: null, chars: 3 }]);
      });

      it('a consumer that stops early (break): not ended, not failed, and return() waits for the release', async () => {
        const up = upstream(evs);
        const c = closer();
        const it = make(up.first, up.step, mapError, c.close);
        let n = 0;
        const loop = (async () => { for await (const _ of it) if (++n === 2) break; })();
        await new Promise((r) => setTimeout(r, 5));
        expect(await settled(loop), 'the break waits for the close').to.equal(false);
        expect(c.calls).to.deep.equal([{ ended: false, failed: false, failure: undefined, usage: null, chars: 3 }]);
        c.finish();
        await loop;
        expect(await it.next()).to.deep.include({ done: true });
        expect(c.calls).to.have.length(1);
      });

      it('a consumer that stops after the terminator but before the upstream\'s own end still settles (ended)', async () => {
        const up = upstream(evs);
        const c = closer();
        c.finish();
        const it = make(up.first, up.step, mapError, c.close);
        for await (const ev of it) if (ev.type === 'end') break;
        expect(c.calls).to.deep.equal([{ ended: true, failed: false, failure: undefined, usage, chars: 5 }]);
      });

      it('a failing close replaces the outcome with its own error', async () => {
        const up = upstream(evs.slice(0, 1));
        const it = make(up.first, up.step, mapError, async () => { throw new Error('store down'); });
        await it.next();
        const err = await it.next().then(() => undefined, (e) => e);
        expect(err).to.have.property('message', 'store down');
      });

      it('calls are taken one at a time: return() made while a next() is pending waits for it, and closes once', async () => {
        let release!: (s: IteratorResult<StreamEvent>) => void;
        const c = closer();
        c.finish();
        const it = make({ done: false, value: evs[0] }, () => new Promise((r) => (release = r)), mapError, c.close);
        await it.next();
        const pending = it.next();
        const stop = it.return!();
        await Promise.resolve();
        expect(c.calls, 'nothing closed while a step is pending').to.have.length(0);
        release({ done: false, value: evs[1] });
        expect(await pending).to.deep.equal({ done: false, value: evs[1] });
        expect(await stop).to.deep.include({ done: true });
        expect(c.calls).to.deep.equal([{ ended: false, failed: false, failure: undefined, usage: null, chars: 3 }]);
      });
    });
  }

  it('EngineEvents: an error from `settled` (the idle watch timed out during the step) replaces the step\'s outcome, a value or a failure', async () => {
    const timeout = new UpstreamError('timeout', 'upstream sent no stream event for 50 ms');
    for (const outcome of ['value', 'failure'] as const) {
      const c = closer();
      c.finish();
      let calls = 0;
      const step = () => (outcome === 'value' ? Promise.resolve({ done: false, value: evs[2] } as IteratorResult<StreamEvent>) : Promise.reject(new Error('aborted')));
      const it = new EngineEvents({ done: false, value: evs[1] }, step, mapError, c.close, () => (++calls >= 2 ? timeout : undefined));
      expect((await it.next()).value, 'the first event: settled is told, nothing replaced').to.deep.equal(evs[1]);
      const err = await it.next().then(() => null, (e) => e);
      expect(err, outcome).to.equal(timeout);
      expect(c.calls, outcome).to.deep.equal([{ ended: false, failed: true, failure: timeout, usage: null, chars: 3 }]);
    }
  });
});
