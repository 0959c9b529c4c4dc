import { expect } from 'chai';
import { PLAIN, PLAIN_ASCII, STRINGIFY, isAscii, jsonIndex, jsonString, literalOf, textKind } from '../../src/wire/json-text.js';
import { OpenAIChunkWriter, completionJson, toCompletion } from '../../src/wire/openai-stream.js';
import type { ChatResult } from '../../src/engine/types.js';
import { GatewayUsage, type Served } from '../../src/engine/chat.js';
import { anthropicMessageJson, toAnthropicMessage } from '../../src/wire/anthropic-messages.js';

/** The engine's usage of a result: cache reads and writes both present (Anthropic's input_tokens leaves them out). */
const USAGE = { promptTokens: 12, completionTokens: 7, cachedTokens: 3, cacheWriteTokens: 2, reasoningTokens: 1 };

/** A completed chat result of one text choice, with `over` and `choice` in place of its fields. */
const result = (over: Partial<ChatResult>, choice: Partial<ChatResult['choices'][number]> = {}): ChatResult => ({
  id: 'abc', model: 'm', created: 1_700_000_000, usage: USAGE, choices: [{ index: 0, content: 'Hello there.', finishReason: 'stop', ...choice }], ...over,
});

/** The engine's gateway_usage for a served request (the offer's names, the cost in nano-USD, the timings). */
function served(offer: Partial<Record<'gateway' | 'developer' | 'upstreamModel', string>> = {}, cost: Partial<Served['cost']> = {},
  ttftMs: number | null = 41, latencyMs = 182, attempts = 1): GatewayUsage {
  return new GatewayUsage({
    offer: { gateway: 'dev', developer: 'acme', upstreamModel: 'm-1', ...offer } as Served['offer'],
    attempts, latencyMs, ttftMs,
    usage: { promptTokens: 1, completionTokens: 2, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
    cost: { totalNano: 123_000, inputNano: 100, outputNano: 122_900, ...cost } as Served['cost'],
  });
}

/** src/wire/json-text.ts: the stream writer's serialisation of a text delta must be JSON.stringify's, exactly. */
describe('unit: jsonString / jsonIndex (JSON.stringify without the runtime call for plain values)', () => {
  it('gives JSON.stringify\'s output for plain text and for every character it escapes or must look at', () => {
    const cases = ['', 'Hi', ' hello, world.', 'say "hi"', 'back\\slash', 'line\nbreak', 'tab\t', '\u0000', '\u001f', '\u007f', 'café',
      'naïve ünïcode', '😀 emoji', 'lone \ud800 high', 'lone \udfff low', '\udc00\ud800', 'sep\u2028\u2029', '</script>', 'x'.repeat(256),
      'x'.repeat(257), `${'x'.repeat(300)}"`, 'ÿ', '\u0100'];
    for (const s of cases) expect(jsonString(s), JSON.stringify(s)).to.equal(JSON.stringify(s));
  });

  it('agrees with JSON.stringify on random strings drawn from every kind of character', () => {
    const pool = ['a', 'Z', ' ', '"', '\\', '\n', '\r', '\u0001', '\u001f', '\u007f', 'é', '€', '\u2028', '\ud83d', '\ude00', '😀', '/'];
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    for (let i = 0; i < 3000; i++) {
      let s = '';
      const len = rnd(40);
      for (let k = 0; k < len; k++) s += pool[rnd(pool.length)];
      expect(jsonString(s)).to.equal(JSON.stringify(s));
    }
  });

  it('textKind: ASCII only with nothing to escape, plain, or for JSON.stringify; literalOf gives JSON.stringify\'s literal for each', () => {
    const kinds: Array<[number, string[]]> = [
      [PLAIN_ASCII, ['', 'Hi', ' hello, world.', '\u007f', '</script>', 'x'.repeat(256)]],
      [PLAIN, ['café', 'ÿ', '\u0080', '€', 'naïve', '\u2028']],
      [STRINGIFY, ['say "hi"', 'back\\slash', 'line\nbreak', '\u0000', '😀', 'lone \ud800', 'x'.repeat(257), 'é'.repeat(257)]],
    ];
    for (const [kind, texts] of kinds) {
      for (const s of texts) {
        expect(textKind(s), JSON.stringify(s)).to.equal(kind);
        expect(literalOf(s, textKind(s)), JSON.stringify(s)).to.equal(JSON.stringify(s));
      }
    }
    expect(isAscii('data: {"a":"\u007f"}\n\n')).to.equal(true);
    expect(isAscii('data: é')).to.equal(false);
    expect(isAscii('\u0080')).to.equal(false);
  });

  it('the chunk writer says which frames are ASCII only (written as latin1), and never one that is not', () => {
    const w = new OpenAIChunkWriter('chatcmpl-1', 'dev/m', 1, true);
    const frames: Array<[string, boolean]> = [];
    const put = (f: string) => frames.push([f, w.ascii]);
    put(w.write({ type: 'start', id: 'u', model: 'm' }));
    put(w.write({ type: 'text', index: 0, text: 'plain words' }));
    put(w.write({ type: 'text', index: 0, text: 'café' }));
    put(w.write({ type: 'text', index: 0, text: 'say "hi"' }));
    put(w.write({ type: 'text', index: 0, text: '😀' }));
    put(w.write({ type: 'tool_call_start', index: 0, toolIndex: 0, id: 't', name: 'f' }));
    put(w.write({ type: 'finish', index: 0, finishReason: 'stop' }));
    put(w.end({}));
    expect(frames.map(([, a]) => a)).to.deep.equal([true, true, false, false, false, false, true, true]);
    for (const [f, a] of frames) if (a) expect(isAscii(f), f).to.equal(true);
    const usage = new OpenAIChunkWriter('chatcmpl-1', 'dev/m', 1, true);
    usage.write({ type: 'usage', usage: { promptTokens: 1, completionTokens: 1, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 } });
    usage.end({ cost: 1 });
    expect(usage.ascii, 'a usage frame is JSON.stringify\'s: not known').to.equal(false);
    const named = new OpenAIChunkWriter('chatcmpl-1', 'dev/modèle', 1, false);
    named.write({ type: 'start', id: 'u', model: 'm' });
    expect(named.ascii, 'a model id with a letter past ASCII in every frame').to.equal(false);
    named.write({ type: 'text', index: 0, text: 'plain' });
    expect(named.ascii).to.equal(false);
  });

  it('completionJson: JSON.stringify\'s text for every completion, written by hand for the usual ones', () => {
    const gateway = { gateway: 'dev', provider: 'acme', model: 'm-1', cost_usd: 0.000123, input_cost_usd: 1e-7, output_cost_usd: 0, latency_ms: 12.5,
      time_to_first_token_ms: null, attempts: 1, cached: false };
    const cases: ChatResult[] = [
      result({}),
      result({ id: 'chatcmpl-x', systemFingerprint: 'fp_1' }),
      result({}, { content: 'café "quoted" \\ line\nbreak 😀 \ud800 lone' }),
      result({}, { content: 'x'.repeat(5000) }),
      result({}, { content: '', finishReason: 'length', refusal: 'no' }),
      result({ choices: [{ index: 0, content: 'a', finishReason: 'stop' }, { index: 1, content: 'b', finishReason: 'length' }] }),
      result({}, { content: null, toolCalls: [{ id: 't', name: 'f', arguments: '{"a":1}' }], finishReason: 'tool_calls' }),
      result({}, { logprobs: { content: [] } as never }),
      result({ usage: { ...USAGE, promptTokens: NaN } }),
      result({ created: 1.5 }),
    ];
    for (const r of cases) {
      for (const gu of [gateway, {}, { note: 'ünïcode' }, served()]) {
        const c = toCompletion(r, 'dev/modèle', gu);
        expect(completionJson(c), JSON.stringify(r).slice(0, 80)).to.equal(JSON.stringify(c));
      }
    }
    // The usual ones are written by hand: JSON.stringify is called for the gateway_usage object only.
    const stringify = JSON.stringify;
    let calls = 0;
    JSON.stringify = ((...args: Parameters<typeof stringify>) => { calls++; return stringify(...args); }) as typeof stringify;
    try {
      for (const r of cases.slice(0, 3)) completionJson(toCompletion(r, 'dev/m', gateway));
      expect(calls).to.equal(4); // three gateway_usage literals, and the third case's lone surrogate through JSON.stringify
      for (const r of cases.slice(0, 3)) completionJson(toCompletion(r, 'dev/m', served()));
      expect(calls).to.equal(5); // the engine's GatewayUsage written by hand: only the lone surrogate again
    } finally {
      JSON.stringify = stringify;
    }
  });

  it('GatewayUsage: its JSON is JSON.stringify\'s, and the literal\'s it replaced (the same fields in the same order)', () => {
    const literal = (g: GatewayUsage) => ({ gateway: g.gateway, provider: g.provider, model: g.model, cost_usd: g.cost_usd, input_cost_usd: g.input_cost_usd,
      output_cost_usd: g.output_cost_usd, latency_ms: g.latency_ms, time_to_first_token_ms: g.time_to_first_token_ms, attempts: g.attempts, cached: g.cached });
    const all = [
      served(),
      served({ gateway: 'gw "quoted"', developer: 'dév', upstreamModel: 'modèle/😀 \\ \n \ud800' }, { totalNano: 1, inputNano: 0, outputNano: 1 }, 0.25, 1234.5),
      served({}, { totalNano: 123_456_789_012, inputNano: 7, outputNano: 123_456_789_005 }, null, 0, 3),
      served({}, { totalNano: NaN, inputNano: Infinity, outputNano: -0 }, NaN, -Infinity),
      served({ upstreamModel: 'x'.repeat(300) }),
    ];
    for (const g of all) {
      expect(g.json()).to.equal(JSON.stringify(g));
      expect(g.json()).to.equal(JSON.stringify(literal(g)));
      expect(Object.keys(g)).to.deep.equal(Object.keys(literal(g)));
    }
    // a field of another type than declared: the whole through JSON.stringify, still its text
    const odd = served();
    (odd as unknown as { attempts: unknown }).attempts = undefined;
    expect(odd.json()).to.equal(JSON.stringify(odd));
  });

  it('anthropicMessageJson: JSON.stringify\'s text for a mapped message of text blocks, undefined for any other', () => {
    // as the Messages handler makes it: the mapped message, its model renamed, gateway_usage last
    const message = (r: ChatResult, g: unknown = served()) => {
      const m = toAnthropicMessage(r, 'dev/m');
      m.model = 'dev/modèle';
      m.gateway_usage = g;
      return m;
    };
    const written = [
      result({}),
      result({ id: 'msg_01' }, { content: 'café "quoted" \\ line\nbreak 😀 \ud800 lone', finishReason: 'length' }),
      result({}, { content: 'x'.repeat(5000), stopSequence: 'END' }),
      result({}, { content: 'stopped', finishReason: 'stop', stopSequence: 'señal' }),
      result({}, { content: '' }),
      result({}, { content: 'filtered', finishReason: 'content_filter' }),
      result({ usage: { ...USAGE, promptTokens: NaN } }),
    ];
    for (const r of written) {
      const m = message(r);
      expect(anthropicMessageJson(m), JSON.stringify(m).slice(0, 80)).to.equal(JSON.stringify(m));
    }
    const others = [
      message(result({}, { content: null, toolCalls: [{ id: 't', name: 'f', arguments: '{"a":1}' }], finishReason: 'tool_calls' })),
      message(result({}, { thinking: [{ text: 'hm', signature: 's' }] } as never)),
      message(result({}), { gateway: 'dev' }),
      { ...message(result({})), type: 'other' },
    ];
    for (const m of others) expect(anthropicMessageJson(m)).to.equal(undefined);
  });

  it('an index: JSON.stringify\'s output', () => {
    for (const i of [0, -0, 1, 7, 42, 1.5, NaN, Infinity]) expect(jsonIndex(i)).to.equal(JSON.stringify(i));
  });
});
