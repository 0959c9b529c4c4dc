import { expect } from 'chai';
import { OpenAIStreamMapper } from '../../src/providers/openai/index.js';
import { AnswerShapes, ChunkShapes, valueSpans } from '../../src/providers/chunk-shapes.js';
import { UpstreamError, type StreamEvent } from '../../src/engine/types.js';

/** Chunks as OpenAI writes them (fixed field order; `usage: null` on every chunk until the usage chunk). */
const base = (id: string, created: number, model = 'gpt-4o') =>
  ({ id, object: 'chat.completion.chunk', created, model, service_tier: 'default', system_fingerprint: 'fp_1' });
const role = (id: string, created: number) =>
  JSON.stringify({ ...base(id, created), choices: [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }], usage: null });
const text = (id: string, created: number, content: string, extra: object = {}) =>
  JSON.stringify({ ...base(id, created), choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], usage: null, ...extra });
const finish = (id: string, created: number, reason = 'stop') =>
  JSON.stringify({ ...base(id, created), choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: reason }], usage: null });
const usage = (id: string, created: number, p: number, c: number, cached = 0, reasoning = 0) =>
  JSON.stringify({ ...base(id, created), choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: reasoning } } });
const stream = (n: number, words: string[]) => {
  const id = `chatcmpl-${n}abc`;
  const created = 1764300000 + n;
  return [role(id, created), ...words.map((w) => text(id, created, w)), finish(id, created), usage(id, created, 10 + n, words.length, n, 2 * n), '[DONE]'];
};

/** The events of `datas` through one mapper, and how many JSON.parse calls it made. */
function run(datas: string[], shapes?: ChunkShapes): { out: StreamEvent[]; parses: number; error?: unknown } {
  const m = new OpenAIStreamMapper(shapes);
  const parse = JSON.parse;
  let parses = 0;
  JSON.parse = ((...a: Parameters<typeof parse>) => { parses++; return parse(...a); }) as typeof parse;
  const out: StreamEvent[] = [];
  try {
    for (const d of datas) out.push(...m.map(d));
    return { out, parses };
  } catch (error) {
    return { out, parses, error };
  } finally {
    JSON.parse = parse;
  }
}
/** The same chunks through a mapper without shapes: every chunk not templated is parsed (the reference). */
const reference = (datas: string[]) => run(datas);

describe('unit: chunk shapes (stream chunks read without a parse, across streams)', () => {
  it("reads a later stream's role, text, finish and usage chunks without a JSON parse, with the same events as parsing", () => {
    const shapes = new ChunkShapes();
    const first = run(stream(1, ['Hello', ' world']), shapes);
    expect(first.out).to.deep.equal(reference(stream(1, ['Hello', ' world'])).out);
    // a later stream: another id, created, texts and usage numbers, and no parse at all
    const words = ['Bonjour', ' le', ' monde', ' 漢字 🙂', ''];
    const second = run(stream(2, words), shapes);
    expect(second.parses).to.equal(0);
    expect(second.out).to.deep.equal(reference(stream(2, words)).out);
    expect(second.out[0]).to.deep.equal({ type: 'start', id: 'chatcmpl-2abc', model: 'gpt-4o' });
    expect(second.out.at(-1)).to.deep.equal({ type: 'usage', usage: { promptTokens: 12, completionTokens: 5, cachedTokens: 2, cacheWriteTokens: 0, reasoningTokens: 4 } });
    expect(shapes.size).to.equal(4); // role, text, finish, usage
  });

  it('decodes a text with escapes as JSON does; a raw control character breaks the stream as the parse does', () => {
    const shapes = new ChunkShapes();
    run(stream(1, ['a']), shapes);
    const id = 'chatcmpl-9';
    const raw = (literal: string) => text(id, 5, 'X').replace('"content":"X"', `"content":${literal}`);
    const datas = [role(id, 5), raw('"caf\\u00e9 \\/ \\"x\\" \\\\"'), raw('"tab\\t\\\\"'), raw('"\\\\\\""'), finish(id, 5), '[DONE]'];
    const got = run(datas, shapes);
    expect(got.out).to.deep.equal(reference(datas).out);
    expect(got.out.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text)).to.deep.equal(['café / "x" \\', 'tab\t\\', '\\"']);
    // one parse per text, of its literal alone (the escapes); none of a whole chunk
    expect(got.parses).to.equal(3);
    const broken = [role(id, 5), raw('"x\u0001y"')];
    const err = run(broken, shapes).error;
    expect(err).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
    expect(reference(broken).error).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
  });

  it("does not take a chunk that differs from a shape outside its holes, or has a value a hole cannot hold", () => {
    const shapes = new ChunkShapes();
    run(stream(1, ['a']), shapes);
    const id = 'chatcmpl-7';
    const others = [
      text(id, 5, 'other model', {}).replace('"gpt-4o"', '"gpt-4o-mini"'),
      finish(id, 5, 'length'),
      text(id, 5, 'one more field', { obfuscation: 'xyz' }),
      text(id, 5, 'a choice more').replace('}],"usage"', '},{"index":1,"delta":{"content":"b"},"logprobs":null,"finish_reason":null}],"usage"'),
      text('chatcmpl-\\u0041', 5, 'an escaped id'), // the id's hole takes only characters that need no escape
      text(id, 5, 'created as a fraction').replace(',"created":5,', ',"created":5.5,'),
      text(id, 5, 'created too long').replace(',"created":5,', ',"created":1234567890123456,'),
      usage(id, 5, 3, 4).replace('"prompt_tokens":3', '"prompt_tokens":-3'),
      JSON.stringify({ error: { message: 'overloaded', code: 529 } }),
    ];
    const probe = new ChunkShapes();
    run(stream(1, ['a']), probe);
    for (const d of others) expect(probe.match(d, { at: 0 }), d).to.equal(undefined);
    const datas = [role(id, 5), ...others.slice(0, -1)];
    expect(run(datas, shapes).out).to.deep.equal(reference(datas).out);
    // a leading zero is not JSON: the parse refuses it, and so does the shape
    const zero = text(id, 5, 'x').replace(',"created":5,', ',"created":05,');
    expect(probe.match(zero, { at: 0 })).to.equal(undefined);
    expect(run([role(id, 5), zero], shapes).error).to.be.instanceOf(UpstreamError).with.property('kind', 'stream_broken');
    // an upstream error in the stream is still an error
    expect(run([role(id, 5), others.at(-1)!], shapes).error).to.be.instanceOf(UpstreamError).with.property('kind', 'server_error');
  });

  it('keeps no shape it cannot prove: a duplicate key, a literal escaped where the scan cannot follow', () => {
    const shapes = new ChunkShapes();
    const dup = '{"id":"a","id":"b","choices":[{"index":0,"delta":{"content":"x"}}]}';
    expect(shapes.learn(dup, JSON.parse(dup))).to.equal(undefined);
    const escapedId = '{"id":"c\\u0041","created":1,"choices":[{"index":0,"delta":{"content":"x"}}]}';
    expect(shapes.learn(escapedId, JSON.parse(escapedId))).to.equal(undefined);
    const err = '{"error":{"message":"x"},"id":"e"}';
    expect(shapes.learn(err, JSON.parse(err))).to.equal(undefined);
    expect(shapes.size).to.equal(0);
    // a text equal to the id, the model and the fingerprint: holes are found by position, not by searching
    const same = text('fp_1', 5, 'fp_1');
    const m = shapes.learn(same, JSON.parse(same))!;
    expect(shapes.match(same, { at: 0 })!.chunk.choices[0].delta.content).to.equal('fp_1');
    expect(same.slice(m.textStart - 1, m.textEnd + 1)).to.equal('"fp_1"');
    expect(same.slice(0, m.textStart)).to.contain('"delta":{"content":"');
  });

  it('reads reasoning deltas and a padding that changes on every chunk, with the events of the parse', () => {
    const shapes = new ChunkShapes();
    const think = (id: string, t: string) => JSON.stringify({ ...base(id, 5), choices: [{ index: 0, delta: { reasoning_content: t }, finish_reason: null }] });
    const padded = (id: string, w: string, pad: string) => text(id, 5, w, { obfuscation: pad });
    const one = (id: string) => [role(id, 5), think(id, 'hmm'), think(id, ' so'), padded(id, 'A', 'xy'), padded(id, 'B', 'q1w2e3'), padded(id, 'C', ''), finish(id, 5), '[DONE]'];
    run(one('chatcmpl-1'), shapes);
    const second = run(one('chatcmpl-2'), shapes);
    expect(second.parses).to.equal(0);
    expect(second.out).to.deep.equal(reference(one('chatcmpl-2')).out);
    expect(second.out.map((e) => e.type)).to.deep.equal(['start', 'thinking', 'thinking', 'text', 'text', 'text', 'finish']);
  });

  it('keeps each text with its choice when a chunk of two choices comes between text deltas of one', () => {
    const id = 'chatcmpl-n2';
    const two = JSON.stringify({ ...base(id, 5), choices: [{ index: 0, delta: { content: '' }, logprobs: null, finish_reason: null },
      { index: 1, delta: { content: 'b' }, logprobs: null, finish_reason: null }], usage: null });
    const datas = [role(id, 5), text(id, 5, 'a'), two, text(id, 5, 'c'), two, text(id, 5, 'd'), '[DONE]'];
    const indexed = (out: StreamEvent[]) => out.filter((e) => e.type === 'text').map((e) => [(e as { index: number }).index, (e as { text: string }).text]);
    const want = [[0, 'a'], [1, 'b'], [0, 'c'], [1, 'b'], [0, 'd']];
    expect(indexed(reference(datas).out)).to.deep.equal(want);
    const shapes = new ChunkShapes();
    expect(indexed(run(datas, shapes).out)).to.deep.equal(want);
    expect(indexed(run(datas, shapes).out)).to.deep.equal(want); // a second stream, through the shapes
  });

  it('gives the events of the parse for ~2,500 chunks of random values, the shapes of each model shared by its streams', () => {
    // A deterministic generator: texts with quotes, backslashes, escapes, unicode and strings found elsewhere in the
    // chunk; ids and numbers of every length the holes take and some they do not.
    let seed = 42;
    const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return Math.floor(seed / 65536) % n; };
    const pieces = ['a', ' ', '"', '\\', 'é', '漢', '🙂', '\n', '\t', '\u2028', 'fp_1', 'gpt-4o', ',"x":1', '}', '{', 'null', '0'];
    const word = () => Array.from({ length: rnd(5) }, () => pieces[rnd(pieces.length)]).join('');
    const byModel = new Map<string, ChunkShapes>();
    let chunks = 0;
    let parses = 0;
    let referenceParses = 0;
    for (let s = 0; s < 300; s++) {
      const id = ['chatcmpl-', 'x', '', 'a-b_c'][rnd(4)] + rnd(100000);
      const created = [0, 7, 1764300000, 999999999999999][rnd(4)];
      const model = ['gpt-4o', 'gpt-4o-mini', 'o3'][rnd(3)];
      const datas = [role(id, created).replace('"gpt-4o"', JSON.stringify(model))];
      for (let w = rnd(8); w >= 0; w--) {
        const kind = rnd(10);
        // mostly text deltas of choice 0; now and then a second choice's text or a reasoning delta between them
        const data = kind === 0
          ? JSON.stringify({ ...base(id, created), choices: [{ index: 0, delta: { content: '' }, logprobs: null, finish_reason: null },
            { index: 1, delta: { content: word() }, logprobs: null, finish_reason: null }], usage: null })
          : kind === 1
            ? JSON.stringify({ ...base(id, created), choices: [{ index: 0, delta: { reasoning_content: word() }, logprobs: null, finish_reason: null }], usage: null })
            : text(id, created, word());
        datas.push(data.replace('"gpt-4o"', JSON.stringify(model)));
      }
      datas.push(finish(id, created, ['stop', 'length'][rnd(2)]).replace('"gpt-4o"', JSON.stringify(model)));
      datas.push(usage(id, created, rnd(100000), rnd(3000), rnd(50), rnd(2)).replace('"gpt-4o"', JSON.stringify(model)), '[DONE]');
      if (!byModel.has(model)) byModel.set(model, new ChunkShapes());
      const got = run(datas, byModel.get(model));
      const want = reference(datas);
      expect(got.error).to.equal(undefined);
      expect(got.out, datas.join('\n')).to.deep.equal(want.out);
      chunks += datas.length;
      parses += got.parses;
      referenceParses += want.parses;
    }
    expect(chunks).to.be.greaterThan(2400);
    // the shapes were used: most of the chunks the reference parses were read through them (what is left: each
    // shape's first chunk and its probe, texts with escapes, which both decode with JSON)
    expect(parses).to.be.lessThan(referenceParses / 2);
    for (const shapes of byModel.values()) expect(shapes.size).to.be.at.most(8);
  });

  it('finds the values of a JSON text by position and path, strings without their quotes', () => {
    const t = '{"a":[1,"x\\"y",{"b":2.5,"c":-3}],"d":"z","e\\u0041":10, "f" : true}';
    expect(valueSpans(t)!.map((s) => [s.path.join('.'), t.slice(s.start, s.end), s.type])).to.deep.equal([
      ['a.0', '1', 'number'], ['a.1', 'x\\"y', 'string'], ['d', 'z', 'string'], ['eA', '10', 'number']]);
    expect(valueSpans('{"a":1')).to.equal(undefined);
    expect(valueSpans('{"a":1} x')).to.equal(undefined);
  });
});

/** A non-streamed answer as OpenAI writes it (the simulator's field order). */
const answer = (id: string, created: number, content: string, p: number, c: number, over: Record<string, unknown> = {}) => JSON.stringify({
  id, object: 'chat.completion', created, model: 'gpt-4o',
  choices: [{ index: 0, message: { role: 'assistant', content, refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 } },
  service_tier: 'default', system_fingerprint: 'fp_1', ...over,
});

describe('unit: answer shapes (non-streamed answers read without a parse)', () => {
  /** `readWhole` with a counting parse; every answer's object is compared with JSON.parse's during `use` and copied. */
  const reader = (shapes: AnswerShapes, learnable: (j: any) => boolean = () => true) => {
    let parses = 0;
    const parse = (t: string) => { parses++; return JSON.parse(t); };
    return {
      read: (text: string): any => shapes.readWhole(text, parse, learnable, (got) => {
        expect(got, text).to.deep.equal(JSON.parse(text));
        return structuredClone(got);
      }),
      get parses() { return parses; },
    };
  };

  it("reads a later answer's id, created, text and usage without a parse, as JSON.parse reads them", () => {
    const shapes = new AnswerShapes();
    const r = reader(shapes);
    r.read(answer('chatcmpl-1', 1764300000, 'Echo: hi', 1, 2));
    expect(r.parses).to.equal(1);
    expect(shapes.size).to.equal(1);
    const texts = ['Bonjour', '', 'a "quoted" \\ word\n', '漢字 🙂 \u2028', 'x'.repeat(5000)];
    texts.forEach((t, i) => r.read(answer(`chatcmpl-${100 + i}xyz`, 1764300001 + i, t, 10 + i, 2000 + i)));
    expect(r.parses).to.equal(1);
    expect(shapes.size).to.equal(1);
    const last = r.read(answer('chatcmpl-9', 7, 'done', 123456789, 0));
    expect(last.usage).to.include({ prompt_tokens: 123456789, completion_tokens: 0, total_tokens: 123456789 });
    expect(last.choices[0].message.content).to.equal('done');
  });

  it('parses what fits no kept shape: another finish reason is learned as a shape of its own, malformed text throws', () => {
    const shapes = new AnswerShapes();
    const r = reader(shapes);
    r.read(answer('a1', 1, 'one', 1, 1));
    const cut = answer('a2', 2, 'two', 2, 2).replace('"finish_reason":"stop"', '"finish_reason":"length"');
    r.read(cut);
    expect(r.parses).to.equal(2);
    r.read(answer('a3', 3, 'three', 3, 3).replace('"finish_reason":"stop"', '"finish_reason":"length"'));
    r.read(answer('a4', 4, 'four', 4, 4));
    expect(r.parses).to.equal(2);
    expect(shapes.size).to.equal(2);
    // a number not an integer, a text with a raw control character: parsed (the first), not a match (the second)
    r.read(answer('a5', 5, 'five', 5, 5).replace('"created":5', '"created":5.5'));
    expect(r.parses).to.equal(3);
    expect(() => shapes.readWhole(answer('a6', 6, 'six', 6, 6).replace('six', 'si\u0001x'), JSON.parse, () => true, (j) => j)).to.throw(SyntaxError);
  });

  it('learns only what `learnable` allows, and stops learning answers that never come again until one fits', () => {
    const shapes = new AnswerShapes();
    const none = reader(shapes, () => false);
    none.read(answer('b1', 1, 'x', 1, 1));
    none.read(answer('b2', 2, 'y', 2, 2));
    expect(none.parses).to.equal(2);
    expect(shapes.size).to.equal(0);
    // answers that differ in a fixed place each time: four are learned, then none
    const r = reader(shapes);
    for (let i = 0; i < 10; i++) r.read(answer(`c${i}`, i, 'z', 1, 1, { service_tier: `tier-${i}` }));
    expect(r.parses).to.equal(10);
    expect(shapes.size).to.equal(4);
    // one that fits a kept shape gives one attempt back: the next new one is learned, and read without a parse after
    r.read(answer('d1', 1, 'fits', 1, 1, { service_tier: 'tier-0' }));
    expect(r.parses).to.equal(10);
    r.read(answer('d2', 2, 'new', 1, 1, { service_tier: 'tier-new' }));
    r.read(answer('d3', 3, 'again', 7, 8, { service_tier: 'tier-new' }));
    expect(r.parses).to.equal(11);
    expect(shapes.size).to.equal(5);
  });

  it("keeps nothing of an answer's text once `use` returned (or threw): the shape's strings are emptied", () => {
    const shapes = new AnswerShapes();
    reader(shapes).read(answer('chatcmpl-first', 1, 'the first', 1, 1));
    let seen: any;
    const id = shapes.readWhole(answer('chatcmpl-second', 2, 'x'.repeat(100_000), 3, 4), JSON.parse, () => true, (j) => {
      seen = j;
      expect(j.choices[0].message.content).to.have.length(100_000);
      return j.id as string;
    });
    expect(id).to.equal('chatcmpl-second');
    expect(seen.id).to.equal('');
    expect(seen.choices[0].message.content).to.equal('');
    expect(seen.usage.prompt_tokens).to.equal(3); // numbers keep nothing alive
    expect(() => shapes.readWhole(answer('chatcmpl-third', 3, 'thrown', 1, 1), JSON.parse, () => true, () => { throw new Error('use failed'); }))
      .to.throw('use failed');
    expect(seen.choices[0].message.content).to.equal('');
    expect(reader(shapes).read(answer('chatcmpl-fourth', 4, 'fourth', 5, 6)).choices[0].message.content).to.equal('fourth');
  });
});
