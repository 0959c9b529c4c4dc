import { expect } from 'chai';
import { jsonIndex, jsonString } from '../../src/wire/json-text.js';

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

  it('an index: JSON.stringify\'s output', () => {
    for (const i of [0, -0, 1, 7, 42, 1.5, NaN, Infinity]) expect(jsonIndex(i)).to.equal(JSON.stringify(i));
  });
});
