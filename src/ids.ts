/**
 * Random ids on the request path, from pools of random bytes (`crypto.randomFillSync`, the CSPRNG randomUUID uses
 * too): hex digits, 4 KiB of bytes turned into 8,192 digits at once (a hold's id takes 16, the other ids 24–32), and
 * UUIDs (`uuid4`: a request's id, a stream's chunk id), 64 written out at once. `crypto.randomUUID()`
 * builds its string a byte at a time: ~2.6 µs an id in the gateway's profile, where a slice of a pool is ~0.3
 * (docs/PERFORMANCE.md, sessions 23, 24 and 56). The pools are this process's own; no byte is handed out twice.
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
/** A byte's two hex digits as one little-endian 16-bit store: the high digit's char code in the low byte. */
const HEX_PAIRS = new Uint16Array(256);
const HEX_DIGITS = '0123456789abcdef';
for (let b = 0; b < 256; b++) HEX_PAIRS[b] = HEX_DIGITS.charCodeAt(b >> 4) | (HEX_DIGITS.charCodeAt(b & 15) << 8);
let uuids = '';
let uuidsAt = 0;

/**
 * A random UUID (version 4, RFC 9562), as `crypto.randomUUID()` gives: 122 random bits, lower-case hex.
 *
 * A slice of a pool of UUIDs already written out (UUIDS_PER_FILL at a time, into bytes, one string made of them), not
 * a template of five slices: that was a string of pieces (a cons string), which V8 flattens, through its runtime, the
 * first time a regular expression reads it, and Node checks every header's value with one (the request id goes out as
 * `X-Request-Id`): ~1,900 instructions a request, besides the template's concatenations (docs/PERFORMANCE.md, session
 * 56). A slice of a flat string is read in place. An id keeps its pool (2.3 KB) alive while it lives, as the hex
 * digits' slices keep theirs.
 */
export function uuid4(): string {
  if (uuidsAt === uuids.length) fillUuids();
  return uuids.slice(uuidsAt, (uuidsAt += UUID_LENGTH));
}

/**
 * Writes the next UUIDS_PER_FILL UUIDs: each random byte's two digits in one 16-bit store at a constant offset (half
 * the time of a loop over the 36 characters with the dashes tested: ~40 against ~80 ns an id in a loop).
 */
function fillUuids(): void {
  const random = crypto.randomFillSync(Buffer.allocUnsafe(16 * UUIDS_PER_FILL));
  const out = Buffer.allocUnsafe(UUID_LENGTH * UUIDS_PER_FILL);
  const view = new DataView(out.buffer, out.byteOffset, out.length);
  const pair = (o: number, byte: number) => view.setUint16(o, HEX_PAIRS[byte], true);
  for (let i = 0; i < UUIDS_PER_FILL; i++) {
    const r = i * 16;
    const o = i * UUID_LENGTH;
    pair(o, random[r]); pair(o + 2, random[r + 1]); pair(o + 4, random[r + 2]); pair(o + 6, random[r + 3]);
    out[o + 8] = 45; // '-'
    pair(o + 9, random[r + 4]); pair(o + 11, random[r + 5]);
    out[o + 13] = 45;
    pair(o + 14, (random[r + 6] & 0x0f) | 0x40); pair(o + 16, random[r + 7]); // version 4
    out[o + 18] = 45;
    pair(o + 19, (random[r + 8] & 0x3f) | 0x80); pair(o + 21, random[r + 9]); // variant 10xx
    out[o + 23] = 45;
    pair(o + 24, random[r + 10]); pair(o + 26, random[r + 11]); pair(o + 28, random[r + 12]);
    pair(o + 30, random[r + 13]); pair(o + 32, random[r + 14]); pair(o + 34, random[r + 15]);
  }
  uuids = out.toString('latin1');
  uuidsAt = 0;
}
