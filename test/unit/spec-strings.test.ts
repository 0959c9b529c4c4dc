import { expect } from 'chai';
import fs from 'node:fs';
import { parse } from 'yaml';
import { loadSpec, oneByte, SPEC_PATH } from '../../src/spec.js';
import { runTs } from '../support/proc.js';
import { stored } from '../support/v8-strings.js';

describe('unit: the spec document stores its ASCII strings one byte per character (src/spec.ts)', () => {
  const text = fs.readFileSync(SPEC_PATH, 'utf8');

  it('why: a YAML text with one character beyond Latin-1 is two-byte, and so is every key and string the yaml package slices from it', () => {
    // names no literal has interned before (a literal is interned when its function compiles: first come, first served)
    const k = `probe_${process.hrtime.bigint()}`;
    // a value of 13 characters or more: V8 keeps such a piece as a slice of the text (two-byte with it); a shorter one
    // is a copy, which Node 24's V8 stores one byte per character when it fits (Node 20's keeps it two-byte)
    const yaml = `${k}_wide: a → b\n${k}_plain: abcdefghijklmnop\n`;
    expect(stored(yaml)).to.equal('two-byte');
    const plain = parse(yaml) as Record<string, string>;
    expect(Object.keys(plain).map(stored)).to.deep.equal(['two-byte', 'two-byte']);
    expect(stored(plain[`${k}_plain`])).to.equal('two-byte');
    // the same text read through oneByte (new names again): only the string that needs two bytes keeps them
    const read = oneByte(parse(yaml.replaceAll(k, `${k}x`), { mapAsMap: true })) as Record<string, string>;
    expect(Object.keys(read).map(stored)).to.deep.equal(['one-byte', 'one-byte']);
    expect(stored(read[`${k}x_plain`])).to.equal('one-byte');
    expect(stored(read[`${k}x_wide`])).to.equal('two-byte');
    expect(read[`${k}x_wide`]).to.equal('a → b');
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
