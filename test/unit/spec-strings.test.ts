import { expect } from 'chai';
import fs from 'node:fs';
import { parse } from 'yaml';
import { loadSpec, oneByte, SPEC_PATH } from '../../src/spec.js';
import { runTs } from '../support/proc.js';
import { BEYOND_LATIN1, stored } from '../support/v8-strings.js';

describe('unit: the spec document stores its ASCII strings one byte per character (src/spec.ts)', () => {
  const text = fs.readFileSync(SPEC_PATH, 'utf8');

  it('the spec text holds characters beyond Latin-1, so V8 keeps the text (and what the yaml package slices from it) two-byte', () => {
    expect(BEYOND_LATIN1.test(text)).to.equal(true);
    expect(stored(text)).to.equal('two-byte');
    const plain = parse(text) as { info: { version: string } };
    expect(stored(plain.info.version)).to.equal('two-byte');
  });

  it('the loaded document is the one the yaml package reads, value for value', () => {
    expect(loadSpec().doc).to.deep.equal(parse(text));
  });

  it('in a fresh process: every key and string of the loaded spec that fits Latin-1 is one-byte, and so are chunks serialised with the names it shares with the code', async function () {
    this.timeout(60_000);
    const { code, stdout, stderr } = await runTs('test/support/spec-strings-child.ts', [], {});
    expect(code, stderr).to.equal(0);
    const r = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(r.strings).to.be.greaterThan(10_000);
    expect(r.twoByteFitting).to.deep.equal([]);
    expect(r.twoByteBeyond).to.be.greaterThan(0); // the descriptions with dashes and arrows stay as they are
    expect({ chunk: r.chunk, usage: r.usage }).to.deep.equal({ chunk: 'one-byte', usage: 'one-byte' });
  });

  it('oneByte: maps become plain objects (a __proto__ key an own property), strings beyond Latin-1 are kept as they are', () => {
    const wide = 'a → b';
    const out = oneByte(new Map<unknown, unknown>([
      ['a', [wide, 'x', 1, null, true]],
      [200, new Map([['__proto__', 'p']])],
    ])) as Record<string, unknown>;
    expect(out).to.deep.equal({ a: [wide, 'x', 1, null, true], 200: JSON.parse('{"__proto__":"p"}') });
    const inner = out['200'] as object;
    expect(Object.getPrototypeOf(inner)).to.equal(Object.prototype);
    expect(Object.keys(inner)).to.deep.equal(['__proto__']);
    expect(stored((out.a as string[])[1])).to.equal('one-byte');
    expect((out.a as string[])[0]).to.equal(wide);
  });
});
