import { expect } from 'chai';
import { newHoldId } from '../../src/store/credits.js';
import { randomHex, uuid4 } from '../../src/ids.js';

/** The ids made on the request path from one pool of random digits (src/ids.ts). */
describe('ids: the pool of random digits', () => {
  it('uuid4 gives random UUIDs as crypto.randomUUID does: version 4, the RFC variant, 122 random bits, no repeats', () => {
    const ids = Array.from({ length: 8000 }, uuid4);
    for (const id of ids) expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).to.equal(ids.length);
    const variants = new Map<string, number>();
    for (const id of ids) variants.set(id[19], (variants.get(id[19]) ?? 0) + 1);
    expect([...variants.keys()].sort()).to.deep.equal(['8', '9', 'a', 'b']);
    for (const n of variants.values()) expect(n).to.be.within(1700, 2300); // 2,000 expected each, σ ≈ 39
    // each random position takes every hex digit (not a fixed, shifted or truncated source)
    for (const at of [0, 7, 9, 15, 21, 24, 35]) expect(new Set(ids.map((id) => id[at])).size, `position ${at}`).to.equal(16);
  });

  it('hands out no digit twice: ids made across pool refills share no random part', () => {
    // the UUIDs' pool holds 64: 3,000 ids refill it ~47 times
    const randoms = Array.from({ length: 3000 }, () => uuid4().replace(/-/g, '').slice(0, 12));
    expect(new Set(randoms).size).to.equal(randoms.length);
    // 4 KiB of bytes is 8,192 digits: 600 of 40 refill it twice
    const hexes = Array.from({ length: 600 }, () => randomHex(40));
    expect(new Set(hexes).size).to.equal(hexes.length);
    const hex = randomHex(40);
    expect(hex).to.match(/^[0-9a-f]{40}$/);
    expect(randomHex(40)).to.not.equal(hex);
    // the hold ids draw on the same pool and stay unique beside it
    const mixed = Array.from({ length: 2000 }, (_, i) => (i % 2 ? uuid4() : newHoldId()));
    expect(new Set(mixed).size).to.equal(mixed.length);
  });
});
