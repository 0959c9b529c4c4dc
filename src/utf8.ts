/**
 * Large JSON bodies between UTF-8 bytes and JavaScript strings, faster than Node 20's defaults once the text is not
 * all ASCII (most of the world's text, and any conversation with an emoji in it).
 *
 * Measured on this project's machine for ~100 KB agent conversations (bench/lib.ts conversationBody; medians of
 * 2,700 fresh buffers and strings each in throwaway scripts; docs/PERFORMANCE.md, session 25):
 * - bytes → string: `toString('utf8')` (V8's decoder) takes 7.5 µs for ASCII but 173 µs with a few accented
 *   letters and emoji in it and 270 µs for Chinese; ICU's transcode to UTF-16, then a UTF-16 string, 112 and 130.
 * - string → bytes, for a string fresh from JSON.stringify: `Buffer.from(text)` (what undici does with a string
 *   body) 27, 222 and 235 µs; TextEncoder.encodeInto into a reused buffer, then a copy of what it wrote, 16, 192
 *   and 206. (Through UTF-16 and ICU took longer than Buffer.from: 28, 254 and 268.)
 * Small bodies keep Node's own conversions: the gain is in large ones, and the benchmark's requests are small.
 */
import { Buffer, isAscii, isUtf8, transcode } from 'node:buffer';

/** Below this many bytes (or characters) Node's conversions are used as they are. */
const LARGE = 16 * 1024;

/**
 * A body's bytes as text, as `buf.toString('utf8')` gives it. For valid UTF-8 both ways give the same string (a
 * byte-order mark included); invalid UTF-8, where the two decoders' replacement characters could differ, and a Node
 * built without ICU keep `toString`.
 */
export function decodeUtf8(buf: Buffer): string {
  if (buf.length < LARGE || typeof transcode !== 'function' || isAscii(buf) || !isUtf8(buf)) return buf.toString('utf8');
  return transcode(buf, 'utf8', 'ucs2').toString('ucs2');
}

const encoder = new TextEncoder();
/** Strings longer than this (in UTF-16 units) are left to Buffer.from: the reused buffer stays at most 1.5 MB. */
const SCRATCH_MAX = 512 * 1024;
/** encodeUtf8's reused buffer: 3 bytes a UTF-16 unit at most, grown to the longest string encoded (up to the cap). */
let scratch = Buffer.alloc(0);

/**
 * A request or answer body: the string itself when small (the socket or undici encodes it), else its UTF-8 bytes,
 * written by TextEncoder into a reused buffer and copied out. The bytes are `Buffer.from(text)`'s, a lone surrogate
 * included (both replace it with U+FFFD). A string over the reused buffer's cap (a base64 image, say) is encoded by
 * Buffer.from: a buffer of 3 bytes a unit of its own was ~18 % faster in a loop for a 2 MB body, but did not show
 * beyond the rounds' spread in the process, for an allocation of three times the string (docs/PERFORMANCE.md,
 * session 25).
 */
export function encodeUtf8(text: string): string | Buffer {
  if (text.length < LARGE) return text;
  if (text.length > SCRATCH_MAX) return Buffer.from(text);
  if (scratch.length < text.length * 3) scratch = Buffer.allocUnsafeSlow(text.length * 3);
  const { written } = encoder.encodeInto(text, scratch);
  return Buffer.from(scratch.subarray(0, written));
}
