/**
 * Random ids on the request path, from the CSPRNG `crypto.randomUUID()` uses too (`crypto.randomFillSync`), taken in
 * blocks: a pool of random hex digits, 8,192 made at once from 4 KiB (the hold ids' random part, `randomHex`), and
 * UUIDs formatted 64 at a time (`uuid4`: the request's id, a stream's). `crypto.randomUUID()` builds its string a
 * byte at a time: ~2.6 µs an id in the gateway's profile, where a slice of the pool is ~0.3 (docs/PERFORMANCE.md,
 * sessions 23, 24 and 41). The blocks are this process's own; no random digit is handed out twice.
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

/** Each byte's two lower-case hex digits, as character codes (`uuid4`). */
const HEX_CODES = new Uint8Array(512);
for (let b = 0; b < 256; b++) {
  const h = b.toString(16).padStart(2, '0');
  HEX_CODES[2 * b] = h.charCodeAt(0);
  HEX_CODES[2 * b + 1] = h.charCodeAt(1);
}
const UUIDS_AHEAD = 64;
const uuidBytes = Buffer.allocUnsafe(16 * UUIDS_AHEAD);
const uuidText = Buffer.allocUnsafe(36 * UUIDS_AHEAD);
/** UUIDs formatted ahead, one after another in one flat string, and where the next one starts. */
let uuids = '';
let uuidsAt = 0;

/**
 * A random UUID (version 4, RFC 9562), as `crypto.randomUUID()` gives: 122 random bits, lower-case hex. Made 64 at
 * a time from 1 KiB of the CSPRNG (`crypto.randomFillSync`), formatted byte by byte into one buffer read as one
 * flat string, each id handed out as a slice of it. An id assembled per call from slices of the digit pool was a
 * tree of ~10 string pieces, copied into a flat string again wherever it was read whole (the request id's header
 * check took it through V8's runtime first: ~2,000 instructions a request; docs/PERFORMANCE.md, session 41).
 */
export function uuid4(): string {
  if (uuidsAt === uuids.length) formatUuids();
  return uuids.slice(uuidsAt, (uuidsAt += 36));
}

/**
 * The next 64 UUIDs. A function of its own, not a branch of `uuid4`: `uuid4` stays small, and this loop, run once
 * every 64 ids, is compiled on its own (V8 optimised it on the stack within the first few thousand requests).
 */
function formatUuids(): void {
  crypto.randomFillSync(uuidBytes);
  let o = 0;
  for (let r = 0; r < uuidBytes.length; r += 16) {
    uuidBytes[r + 6] = (uuidBytes[r + 6] & 0x0f) | 0x40; // version 4
    uuidBytes[r + 8] = (uuidBytes[r + 8] & 0x3f) | 0x80; // variant 10
    for (let j = 0; j < 16; j++) {
      if (j === 4 || j === 6 || j === 8 || j === 10) uuidText[o++] = 0x2d; // '-'
      const h = uuidBytes[r + j] * 2;
      uuidText[o++] = HEX_CODES[h];
      uuidText[o++] = HEX_CODES[h + 1];
    }
  }
  uuids = uuidText.toString('latin1', 0, o);
  uuidsAt = 0;
}
