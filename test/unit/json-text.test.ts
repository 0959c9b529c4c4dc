import { expect } from 'chai';
import { asciiString, isAscii, jsonIndex, jsonString } from '../../src/wire/json-text.js';
import { OpenAIChunkWriter } from '../../src/wire/openai-stream.js';

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

  it('asciiString: JSON.stringify\'s literal for short text of ASCII with nothing to escape, undefined for anything else', () => {
    for (const s of ['', 'Hi', ' hello, world.', '\u007f', '</script>', 'x'.repeat(256)]) expect(asciiString(s), s).to.equal(JSON.stringify(s));
    for (const s of ['say "hi"', 'back\\slash', 'line\nbreak', '\u0000', 'café', 'ÿ', '\u0080', '€', '😀', 'lone \ud800', 'x'.repeat(257)]) {
      expect(asciiString(s), JSON.stringify(s)).to.equal(undefined);
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

  it('an index: JSON.stringify\'s output', () => {
    for (const i of [0, -0, 1, 7, 42, 1.5, NaN, Infinity]) expect(jsonIndex(i)).to.equal(JSON.stringify(i));
  });
});
