/**
 * Random ids on the request path, from one pool of random hex digits: `crypto.randomFillSync` 4 KiB at a time (the
 * CSPRNG randomUUID uses too), turned into 8,192 hex digits at once; a request takes ~80 (its id, its hold's, its
 * stream's). `crypto.randomUUID()` builds its string a byte at a time: ~2.6 µs an id in the gateway's profile,
 * where a slice of the pool is ~0.3 (docs/PERFORMANCE.md, sessions 23 and 24). The pool is this process's own; a
 * digit is never handed out twice.
 */
import crypto from 'node:crypto';

let pool = '';
let poolAt = 0;
const POOL_BYTES = 4096;

/** `n` random hex digits (n ≤ 8192). */
export function randomHex(n: number): string {
  if (poolAt + n > pool.length) {
    pool = crypto.randomFillSync(Buffer.allocUnsafe(POOL_BYTES)).toString('hex');
    poolAt = 0;
  }
  return pool.slice(poolAt, (poolAt += n));
}

/** A hex digit's char code -> the UUID variant digit (binary 10xx) carrying its two low bits. */
export const VARIANT: string[] = [];
for (let v = 0; v < 16; v++) VARIANT[v.toString(16).charCodeAt(0)] = '89ab'[v & 3];

/** A random UUID (version 4, RFC 9562), as `crypto.randomUUID()` gives: 122 random bits, lower-case hex. */
export function uuid4(): string {
  const h = randomHex(31);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(12, 15)}-${VARIANT[h.charCodeAt(15)]}${h.slice(16, 19)}-${h.slice(19)}`;
}
