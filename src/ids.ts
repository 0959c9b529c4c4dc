/**
 * Random ids on the request path, from a pool of random hex digits: `crypto.randomFillSync` 4 KiB at a time (the
 * CSPRNG randomUUID uses too), turned into 8,192 hex digits at once; a request takes ~40 (its hold's id, its stream's).
 * `crypto.randomUUID()` builds its string a byte at a time: ~2.6 µs an id in the gateway's profile, where a slice
 * of the pool is ~0.3 (docs/PERFORMANCE.md, sessions 23 and 24). The request ids (`uuid4`) come from a pool of
 * UUIDs written out the same way. The pools are this process's own; a digit is never handed out twice.
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

/** UUIDs formatted per refill of their own pool. */
const UUIDS_PER_FILL = 64;
const UUID_LENGTH = 36;
/** A byte's two hex digits, as char codes (high, low). */
const HEX_CODES = Buffer.from('0123456789abcdef', 'latin1');
let uuids = '';
let uuidsAt = 0;

/**
 * A random UUID (version 4, RFC 9562), as `crypto.randomUUID()` gives: 122 random bits, lower-case hex.
 *
 * A slice of a pool of UUIDs already written out (UUIDS_PER_FILL at a time, into bytes, one string made of them), not
 * a template of five slices: that was a string of pieces (a cons string), which V8 flattens, through its runtime, the
 * first time a regular expression reads it, and Node checks every header's value with one (the request id goes out as
 * `x-request-id`): ~1,900 instructions a request, besides the template's concatenations (docs/PERFORMANCE.md, session
 * 56). A slice of a flat string is read in place. An id keeps its pool (2.3 KB) alive while it lives, as the hex
 * digits' slices keep theirs.
 */
export function uuid4(): string {
  if (uuidsAt === uuids.length) fillUuids();
  return uuids.slice(uuidsAt, (uuidsAt += UUID_LENGTH));
}

function fillUuids(): void {
  const random = crypto.randomFillSync(Buffer.allocUnsafe(16 * UUIDS_PER_FILL));
  const out = Buffer.allocUnsafe(UUID_LENGTH * UUIDS_PER_FILL);
  let o = 0;
  for (let i = 0; i < UUIDS_PER_FILL; i++) {
    const r = i * 16;
    random[r + 6] = (random[r + 6] & 0x0f) | 0x40; // version 4
    random[r + 8] = (random[r + 8] & 0x3f) | 0x80; // variant 10xx
    for (let b = 0; b < 16; b++) {
      if (b === 4 || b === 6 || b === 8 || b === 10) out[o++] = 45; // '-'
      const byte = random[r + b];
      out[o++] = HEX_CODES[byte >> 4];
      out[o++] = HEX_CODES[byte & 15];
    }
  }
  uuids = out.toString('latin1');
  uuidsAt = 0;
}
