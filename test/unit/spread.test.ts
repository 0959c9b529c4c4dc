import { expect } from 'chai';
import { spread } from '../../src/spread.js';

describe('spread (an object spread built by assignment)', () => {
  const cases: Array<[string, Record<string, unknown> | null | undefined, Record<string, unknown> | null | undefined]> = [
    ['one object', { b: 1, a: 'x', c: null }, undefined],
    ['a second object with new and repeated keys', { model: 'm', stream: false, n: 2 }, { stream: true, include_usage: true }],
    ['integer-like keys first, as a spread orders them', { z: 1, 10: 'ten', 2: 'two' }, { 1: 'one', y: 2 }],
    ['undefined values kept as keys', { a: undefined }, { b: undefined }],
    ['nothing', undefined, null],
  ];
  for (const [name, a, b] of cases) {
    it(`${name}: the same keys, order and values as { ...a, ...b }`, () => {
      const got = spread(a, b);
      const want = { ...a, ...b };
      expect(Object.keys(got)).to.deep.equal(Object.keys(want));
      expect(got).to.deep.equal(want);
      expect(JSON.stringify(got)).to.equal(JSON.stringify(want));
      expect(Object.getPrototypeOf(got)).to.equal(Object.prototype);
    });
  }

  it('copies, never shares: changing the result leaves the inputs as they were', () => {
    const a = { stream: false };
    const got = spread<{ stream: boolean; model?: string }>(a);
    got.stream = true;
    got.model = 'm';
    expect(a).to.deep.equal({ stream: false });
  });

  it('keeps a "__proto__" key of a parsed body as an own property, not as the prototype', () => {
    const body = JSON.parse('{"model":"m","__proto__":{"polluted":true},"user":"u"}');
    const got = spread(body);
    expect(Object.getPrototypeOf(got)).to.equal(Object.prototype);
    expect((got as { polluted?: boolean }).polluted).to.equal(undefined);
    expect(Object.keys(got)).to.deep.equal(['model', '__proto__', 'user']);
    expect(JSON.stringify(got)).to.equal(JSON.stringify({ ...body }));
    expect(JSON.stringify(got)).to.equal('{"model":"m","__proto__":{"polluted":true},"user":"u"}');
  });
});
