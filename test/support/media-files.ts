/**
 * Real audio files made by the tests, byte by byte, with known durations: a PCM WAV, an MP3 (MPEG-1 Layer III
 * frames of silence), an Ogg Opus stream (CRC-checked pages) and a WebM/Opus recording as a browser's
 * MediaRecorder writes it (unknown-size Segment and Clusters, no Duration unless asked). music-metadata reads
 * their durations; the gateway's format sniffing sees their real magic bytes.
 */

/** 16-bit PCM WAV, the canonical 44-byte header; `seconds` of a quiet 440 Hz tone. */
export function pcmWav(seconds: number, sampleRate = 16_000, channels = 1): Buffer {
  const frames = Math.round(seconds * sampleRate);
  const data = Buffer.alloc(frames * channels * 2);
  for (let i = 0; i < frames; i++) {
    const v = Math.round(Math.sin((2 * Math.PI * 440 * i) / sampleRate) * 3000);
    for (let c = 0; c < channels; c++) data.writeInt16LE(v, (i * channels + c) * 2);
  }
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVE', 8, 'latin1');
  h.write('fmt ', 12, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * channels * 2, 28); // byte rate
  h.writeUInt16LE(channels * 2, 32); // block align
  h.writeUInt16LE(16, 34); // bits per sample
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

/**
 * MP3: an ID3v2.4 tag with a title, then `frames` MPEG-1 Layer III frames (128 kbit/s, joint stereo, no padding)
 * whose side information is all zero — silence to a decoder. A frame holds 1,152 samples: at 48 kHz it is 384
 * bytes and 24 ms (2,500 frames = 60 s exactly); at 44.1 kHz 417 bytes.
 */
export function mp3(frames: number, sampleRate: 44_100 | 48_000 = 48_000): Buffer {
  const title = Buffer.concat([Buffer.from([3]), Buffer.from('test tone', 'latin1')]); // UTF-8 text frame
  const tit2 = Buffer.alloc(10);
  tit2.write('TIT2', 0, 'latin1');
  tit2.writeUInt32BE(title.length, 4); // sizes < 128 are the same in syncsafe form
  const tag = Buffer.concat([tit2, title]);
  const id3 = Buffer.concat([Buffer.from('ID3', 'latin1'), Buffer.from([4, 0, 0, 0, 0, 0, tag.length]), tag]);
  const frame = Buffer.alloc(Math.floor((144 * 128_000) / sampleRate));
  // sync, MPEG-1 Layer III without CRC; bitrate index 9 (128 kbit/s) and the rate's index; joint stereo
  frame.set([0xff, 0xfb, 0x90 | ((sampleRate === 48_000 ? 1 : 0) << 2), 0x64]);
  return Buffer.concat([id3, ...Array.from({ length: frames }, () => frame)]);
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    t[i] = r >>> 0;
  }
  return t;
})();

/** Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, zero initial value and no final XOR. */
function oggCrc(b: Buffer): number {
  let crc = 0;
  for (const byte of b) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ byte) & 0xff]) >>> 0;
  return crc;
}

function oggPage(flags: number, granule: bigint, seq: number, packets: Buffer[]): Buffer {
  const lacing: number[] = [];
  for (const p of packets) {
    let left = p.length;
    while (left >= 255) { lacing.push(255); left -= 255; }
    lacing.push(left);
  }
  const head = Buffer.alloc(27);
  head.write('OggS', 0, 'latin1');
  head[5] = flags;
  head.writeBigInt64LE(granule, 6);
  head.writeUInt32LE(0x5eed, 14); // stream serial number
  head.writeUInt32LE(seq, 18);
  head[26] = lacing.length;
  const page = Buffer.concat([head, Buffer.from(lacing), ...packets]);
  page.writeUInt32LE(oggCrc(page), 22);
  return page;
}

const PRE_SKIP = 312;

function opusHead(): Buffer {
  const h = Buffer.alloc(19);
  h.write('OpusHead', 0, 'latin1');
  h[8] = 1; // version
  h[9] = 1; // mono
  h.writeUInt16LE(PRE_SKIP, 10);
  h.writeUInt32LE(48_000, 12);
  return h;
}

/** One 20 ms Opus packet: TOC 0xF8 (CELT, fullband, 20 ms, mono, one frame) and a silent frame. */
const OPUS_SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);

/** Ogg Opus, mono, 50 packets of 20 ms a page; duration exactly `seconds` (a whole number of 20 ms packets). */
export function oggOpus(seconds: number): Buffer {
  const vendor = Buffer.from('gateway-tests', 'latin1');
  const tags = Buffer.alloc(8 + 4 + vendor.length + 4);
  tags.write('OpusTags', 0, 'latin1');
  tags.writeUInt32LE(vendor.length, 8);
  vendor.copy(tags, 12);
  const pages = [oggPage(0x02, 0n, 0, [opusHead()]), oggPage(0, 0n, 1, [tags])];
  const packets = Math.round(seconds * 50);
  for (let done = 0, seq = 2; done < packets; seq++) {
    const n = Math.min(50, packets - done);
    done += n;
    pages.push(oggPage(done === packets ? 0x04 : 0, BigInt(PRE_SKIP + done * 960), seq, Array.from({ length: n }, () => OPUS_SILENCE)));
  }
  return Buffer.concat(pages);
}

function vint(n: number): Buffer {
  for (let len = 1; len <= 8; len++) {
    if (n < 2 ** (7 * len) - 1) {
      const b = Buffer.alloc(len);
      let v = n;
      for (let i = len - 1; i >= 0; i--) { b[i] = v & 0xff; v = Math.floor(v / 256); }
      b[0] |= 0x80 >> (len - 1);
      return b;
    }
  }
  throw new Error('too large');
}

const UNKNOWN_SIZE = Buffer.from([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
const el = (id: number[], ...body: Buffer[]) => { const d = Buffer.concat(body); return Buffer.concat([Buffer.from(id), vint(d.length), d]); };
const uint = (id: number[], v: number) => el(id, Buffer.from([v >> 24 & 0xff, v >> 16 & 0xff, v >> 8 & 0xff, v & 0xff]));
const str = (id: number[], s: string) => el(id, Buffer.from(s, 'latin1'));
const f64 = (id: number[], v: number) => { const b = Buffer.alloc(8); b.writeDoubleBE(v); return el(id, b); };

/**
 * WebM/Opus as MediaRecorder streams it: the Segment and each one-second Cluster have unknown sizes, and Info
 * has no Duration (unless `withDuration`). SimpleBlocks of 20 ms; the last block starts at `seconds` − 20 ms.
 */
export function webmOpus(seconds: number, opts: { withDuration?: boolean } = {}): Buffer {
  const ebml = el([0x1a, 0x45, 0xdf, 0xa3], uint([0x42, 0x86], 1), uint([0x42, 0xf7], 1), uint([0x42, 0xf2], 4), uint([0x42, 0xf3], 8),
    str([0x42, 0x82], 'webm'), uint([0x42, 0x87], 4), uint([0x42, 0x85], 2));
  const info = el([0x15, 0x49, 0xa9, 0x66], uint([0x2a, 0xd7, 0xb1], 1_000_000), str([0x4d, 0x80], 'tests'), str([0x57, 0x41], 'tests'),
    ...(opts.withDuration ? [f64([0x44, 0x89], seconds * 1000)] : []));
  const track = el([0xae], uint([0xd7], 1), uint([0x73, 0xc5], 1), uint([0x83], 2), str([0x86], 'A_OPUS'), el([0x63, 0xa2], opusHead()),
    el([0xe1], f64([0xb5], 48_000), uint([0x9f], 1)));
  const tracks = el([0x16, 0x54, 0xae, 0x6b], track);
  const clusters: Buffer[] = [];
  const blocks = Math.round(seconds * 50);
  for (let start = 0; start < blocks; start += 50) {
    const parts = [uint([0xe7], start * 20)];
    for (let i = start; i < Math.min(blocks, start + 50); i++) {
      const rel = Buffer.alloc(2);
      rel.writeInt16BE((i - start) * 20);
      parts.push(el([0xa3], Buffer.from([0x81]), rel, Buffer.from([0x80]), OPUS_SILENCE));
    }
    clusters.push(Buffer.concat([Buffer.from([0x1f, 0x43, 0xb6, 0x75]), UNKNOWN_SIZE, ...parts]));
  }
  return Buffer.concat([ebml, Buffer.from([0x18, 0x53, 0x80, 0x67]), UNKNOWN_SIZE, info, tracks, ...clusters]);
}
