/**
 * Large JSON bodies between UTF-8 bytes and JavaScript strings, faster than Node 20's defaults once the text is not
 * all ASCII (most of the world's text, and any conversation with an emoji in it).
 *
 * Measured on this project's machine for ~100 KB agent conversations (session 25, docs/PERFORMANCE.md):
 * - bytes → string: `toString('utf8')` (V8's decoder) takes 7 µs for ASCII but 206 µs with a few accented letters
 *   and emoji in it and 334 µs for a Chinese one; ICU's transcode to UTF-16 takes 131 and 156 µs.
 * - string → bytes: `Buffer.from(text)` (what undici does with a string body) takes 85–113 µs for the same two;
 *   UTF-16 then ICU's transcode 44–75 µs.
 * Small bodies keep Node's own conversions: the gain is in large ones, and the benchmark's requests are small.
 */
import { isAscii, isUtf8, transcode } from 'node:buffer';

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

/**
 * A request body for undici: the string itself when small (undici makes its Buffer), else its UTF-8 bytes made
 * through UTF-16 and ICU. The bytes are `Buffer.from(text)`'s; a string ICU refuses (a lone surrogate, which
 * JSON.stringify never leaves unescaped) is handed on as it is, so `Buffer.from` replaces it as before.
 */
export function encodeUtf8(text: string): string | Buffer {
  if (text.length < LARGE || typeof transcode !== 'function') return text;
  try {
    return transcode(Buffer.from(text, 'ucs2'), 'ucs2', 'utf8');
  } catch {
    return text;
  }
}
