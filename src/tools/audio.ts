/**
 * Audio duration from the bytes alone (no decoder, no dependency): MP3 by walking its frame headers, WAV from
 * its `fmt `/`data` chunks, Ogg Opus from the last page's granule position. Each returns seconds, or null when
 * the bytes are not what they claim to be.
 */

const MP3_BITRATES: Record<string, number[]> = {
  // kbit/s by bitrate index, per "MPEG version / layer"
  '1/1': [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
  '1/2': [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
  '1/3': [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  '2/1': [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
  '2/2': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  '2/3': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const MP3_RATES: Record<number, number[]> = { 1: [44100, 48000, 32000], 2: [22050, 24000, 16000], 25: [11025, 12000, 8000] };

interface Mp3Frame {
  length: number;
  samples: number;
  sampleRate: number;
}

/** The frame whose header starts at `i`, or null when the four bytes are not a valid MPEG audio header. */
function mp3Frame(b: Buffer, i: number): Mp3Frame | null {
  if (i + 4 > b.length || b[i] !== 0xff || (b[i + 1] & 0xe0) !== 0xe0) return null;
  const v = (b[i + 1] >> 3) & 3; // 0: MPEG 2.5, 2: MPEG 2, 3: MPEG 1
  const l = (b[i + 1] >> 1) & 3; // 1: layer III, 2: layer II, 3: layer I
  if (v === 1 || l === 0) return null;
  const version = v === 3 ? 1 : v === 2 ? 2 : 25;
  const layer = 4 - l;
  const bitrate = MP3_BITRATES[`${version === 1 ? 1 : 2}/${layer}`][(b[i + 2] >> 4) & 15];
  const sampleRate = MP3_RATES[version][(b[i + 2] >> 2) & 3];
  if (!bitrate || !sampleRate) return null; // free-format or reserved values
  const pad = (b[i + 2] >> 1) & 1;
  const br = bitrate * 1000;
  if (layer === 1) return { length: (Math.floor((12 * br) / sampleRate) + pad) * 4, samples: 384, sampleRate };
  if (layer === 2 || version === 1) return { length: Math.floor((144 * br) / sampleRate) + pad, samples: 1152, sampleRate };
  return { length: Math.floor((72 * br) / sampleRate) + pad, samples: 576, sampleRate };
}

export function mp3Duration(b: Buffer): number | null {
  let i = 0;
  // ID3v2 tag: "ID3", version (2), flags (1), size as four 7-bit bytes; a footer adds 10 bytes.
  if (b.length >= 10 && b.toString('latin1', 0, 3) === 'ID3') {
    const size = ((b[6] & 0x7f) << 21) | ((b[7] & 0x7f) << 14) | ((b[8] & 0x7f) << 7) | (b[9] & 0x7f);
    i = 10 + size + (b[5] & 0x10 ? 10 : 0);
  }
  let seconds = 0;
  let frames = 0;
  while (i < b.length) {
    const f = mp3Frame(b, i);
    if (f && f.length > 0) {
      seconds += f.samples / f.sampleRate;
      frames++;
      i += f.length;
    } else {
      i++; // junk between frames (or a trailing ID3v1 tag): resynchronise on the next header
    }
  }
  return frames ? seconds : null;
}

export function wavDuration(b: Buffer): number | null {
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WAVE') return null;
  let byteRate = 0;
  for (let i = 12; i + 8 <= b.length;) {
    const id = b.toString('latin1', i, i + 4);
    const size = b.readUInt32LE(i + 4);
    if (id === 'fmt ' && i + 16 <= b.length) byteRate = b.readUInt32LE(i + 16);
    if (id === 'data') {
      if (!byteRate) return null;
      // A streamed WAV may announce an unknown (0 or 0xFFFFFFFF) data size: count the bytes that are there.
      const available = b.length - (i + 8);
      const bytes = size === 0 || size > available ? available : size;
      return bytes / byteRate;
    }
    i += 8 + size + (size & 1);
  }
  return null;
}

export function opusDuration(b: Buffer): number | null {
  let preSkip: number | null = null;
  let granule: bigint | null = null;
  for (let i = 0; i + 27 <= b.length;) {
    if (b.toString('latin1', i, i + 4) !== 'OggS') return null;
    const segments = b[i + 26];
    let payload = 0;
    for (let s = 0; s < segments; s++) payload += b[i + 27 + s];
    const start = i + 27 + segments;
    if (preSkip === null && b.toString('latin1', start, start + 8) === 'OpusHead') preSkip = b.readUInt16LE(start + 10);
    const g = b.readBigInt64LE(i + 6);
    if (g >= 0n) granule = g; // -1: no packet ends on this page
    i = start + payload;
  }
  if (preSkip === null || granule === null) return null;
  return Math.max(0, Number(granule) - preSkip) / 48_000;
}

export function audioDuration(format: 'mp3' | 'wav' | 'opus', b: Buffer): number | null {
  const s = format === 'mp3' ? mp3Duration(b) : format === 'wav' ? wavDuration(b) : opusDuration(b);
  return s === null ? null : Math.round(s * 1000) / 1000;
}
