import { expect } from 'chai';
import { isoTime } from '../../src/store/iso-time.js';

describe('isoTime: toISOString from a prefix cached per second', () => {
  it('gives what toISOString gives, across second, minute, day and year boundaries and in any order', () => {
    const instants = [0, 999, 1000, 86_399_999, Date.UTC(2026, 11, 31, 23, 59, 59, 990), Date.UTC(2028, 1, 29, 12), Date.now(), 253402300799999];
    for (const at of instants) {
      for (let ms = at - 25; ms <= at + 25; ms++) {
        if (ms < 0) continue;
        expect(isoTime(ms), String(ms)).to.equal(new Date(ms).toISOString());
      }
    }
    // back and forth between seconds: the cached prefix follows
    for (const ms of [5_000, 1_000, 5_001, 4_999, 1e12 + 7, 1e12 - 7]) expect(isoTime(ms)).to.equal(new Date(ms).toISOString());
    for (let i = 0; i < 2000; i++) {
      const ms = Math.floor(Math.random() * 253402300800000);
      expect(isoTime(ms)).to.equal(new Date(ms).toISOString());
    }
  });

  it('truncates a fractional millisecond as Date does, leaves years outside 0000-9999 to toISOString, and defaults to now', () => {
    expect(isoTime(1_700_000_000_123.9)).to.equal(new Date(1_700_000_000_123.9).toISOString());
    expect(isoTime(-1)).to.equal(new Date(-1).toISOString());
    expect(isoTime(253402300800000)).to.equal('+010000-01-01T00:00:00.000Z');
    const before = Date.now();
    const t = Date.parse(isoTime());
    expect(t).to.be.within(before, Date.now());
  });
});
