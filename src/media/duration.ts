/**
 * How long an uploaded audio file plays, from its bytes: music-metadata for every container but WebM, and a
 * small EBML walk for WebM. Browsers' MediaRecorder streams WebM with unknown-size Segment and Cluster elements
 * and no Duration (it is not known when the header is written); music-metadata gives up on those, so the walk
 * reads the declared Duration when there is one and otherwise the timestamp of the last block plus one block
 * interval. null when the file says nothing usable (the caller then falls back; see transcription.ts).
 */
import type { Logger } from '../logger.js';
import type { AudioFile } from './formats.js';

/**
 * music-metadata is ESM that default-imports CommonJS packages (content-type). Loaded by a static import, it
 * breaks when this module itself is loaded through require() — as mocha does under tsx, whose CommonJS
 * transform of the package loses those default imports. A dynamic import() always loads it as ESM (and only
 * when the first upload needs it).
 */
let musicMetadata: Promise<typeof import('music-metadata')> | undefined;

const round = (s: number) => Math.round(s * 1000) / 1000;
const usable = (s: number | null | undefined): s is number => typeof s === 'number' && Number.isFinite(s) && s > 0;

export async function audioDuration(file: AudioFile, log?: Logger): Promise<number | null> {
  if (file.container === 'webm') {
    const s = webmDuration(file.data);
    return usable(s) ? round(s) : null;
  }
  try {
    musicMetadata ??= import('music-metadata');
    const meta = await (await musicMetadata).parseBuffer(file.data, { mimeType: file.mimeType, size: file.data.length }, { duration: true, skipCovers: true });
    return usable(meta.format.duration) ? round(meta.format.duration) : null;
  } catch (err) {
    log?.debug({ err: (err as Error).message, container: file.container }, 'audio duration unreadable');
    return null;
  }
}

interface Vint { value: number; length: number; unknown: boolean }

/** An EBML variable-length integer at `i`; `keepMarker` for element ids (which keep their length bits). */
function vint(b: Buffer, i: number, keepMarker: boolean): Vint | null {
  if (i >= b.length || b[i] === 0) return null;
  const length = Math.clz32(b[i]) - 23; // leading zeros within the byte, plus one
  if (length > 8 || i + length > b.length) return null;
  let value = keepMarker ? b[i] : b[i] & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let k = 1; k < length; k++) {
    value = value * 256 + b[i + k];
    if (b[i + k] !== 0xff) allOnes = false;
  }
  return { value, length, unknown: !keepMarker && allOnes };
}

function uint(b: Buffer, at: number, len: number): number {
  let v = 0;
  for (let k = 0; k < len; k++) v = v * 256 + b[at + k];
  return v;
}

const SEGMENT = 0x18538067;
const INFO = 0x1549a966;
const CLUSTER = 0x1f43b675;
const BLOCK_GROUP = 0xa0;
const TIMECODE_SCALE = 0x2ad7b1;
const DURATION = 0x4489;
const CLUSTER_TIMECODE = 0xe7;
const SIMPLE_BLOCK = 0xa3;
const BLOCK = 0xa1;

/**
 * Seconds of a WebM/Matroska file. Master elements on the way to the blocks are entered (their children follow
 * their header directly, so an unknown size does not matter); every other element is skipped by its size.
 */
export function webmDuration(b: Buffer): number | null {
  let scale = 1_000_000; // ns per timestamp tick
  let declared: number | null = null;
  let clusterTime = 0;
  let last = -Infinity;
  let before = -Infinity;
  for (let i = 0; i < b.length;) {
    const id = vint(b, i, true);
    const size = id && vint(b, i + id.length, false);
    if (!id || !size) break;
    const data = i + id.length + size.length;
    if (id.value === SEGMENT || id.value === INFO || id.value === CLUSTER || id.value === BLOCK_GROUP) {
      i = data;
      continue;
    }
    if (size.unknown || data + size.value > b.length) break; // unskippable, or cut off: what was read stands
    if (id.value === TIMECODE_SCALE && size.value <= 8) scale = uint(b, data, size.value);
    else if (id.value === DURATION && (size.value === 4 || size.value === 8)) declared = size.value === 4 ? b.readFloatBE(data) : b.readDoubleBE(data);
    else if (id.value === CLUSTER_TIMECODE && size.value <= 8) clusterTime = uint(b, data, size.value);
    else if ((id.value === SIMPLE_BLOCK || id.value === BLOCK) && size.value >= 4) {
      const track = vint(b, data, false);
      if (track && data + track.length + 2 <= b.length) {
        const t = clusterTime + b.readInt16BE(data + track.length);
        if (t > last) [before, last] = [last, t];
        else if (t > before && t < last) before = t;
      }
    }
    i = data + size.value;
  }
  if (usable(declared)) return (declared * scale) / 1e9;
  if (last === -Infinity) return null;
  // The last block plays for about as long as the gap before it (a frame; 20 ms for Opus as browsers write it).
  const lastLength = before === -Infinity ? 0 : last - before;
  return ((last + lastLength) * scale) / 1e9;
}
