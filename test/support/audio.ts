/** Hand-built audio files with known durations, for the duration readers and the TTS fake upstream. */

/** An ID3v2 tag (20 bytes of payload) and `n` MPEG-1 layer III frames, 128 kbit/s, 44.1 kHz, 417 bytes each. */
export function mp3Frames(n: number): Buffer {
  const id3 = Buffer.concat([Buffer.from('ID3'), Buffer.from([4, 0, 0, 0, 0, 0, 20]), Buffer.alloc(20)]);
  const frame = Buffer.alloc(417);
  frame.set([0xff, 0xfb, 0x90, 0x64]);
  return Buffer.concat([id3, ...Array.from({ length: n }, () => frame)]);
}

/** A PCM WAV: 16 kHz mono 16-bit (32,000 bytes per second) with `dataBytes` of silence and a LIST chunk first. */
export function wav(dataBytes: number, declaredSize = dataBytes): Buffer {
  const fmt = Buffer.alloc(24);
  fmt.write('fmt ', 0, 'latin1');
  fmt.writeUInt32LE(16, 4);
  fmt.writeUInt16LE(1, 8); // PCM
  fmt.writeUInt16LE(1, 10); // mono
  fmt.writeUInt32LE(16000, 12);
  fmt.writeUInt32LE(32000, 16); // byte rate
  fmt.writeUInt16LE(2, 20);
  fmt.writeUInt16LE(16, 22);
  const list = Buffer.concat([Buffer.from('LIST', 'latin1'), Buffer.from([3, 0, 0, 0]), Buffer.from('abc'), Buffer.alloc(1)]);
  const dataHead = Buffer.alloc(8);
  dataHead.write('data', 0, 'latin1');
  dataHead.writeUInt32LE(declaredSize >>> 0, 4);
  const body = Buffer.concat([Buffer.from('WAVE', 'latin1'), list, fmt, dataHead, Buffer.alloc(dataBytes)]);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(body.length, 4);
  return Buffer.concat([riff, body]);
}

function oggPage(granule: bigint, payload: Buffer): Buffer {
  const head = Buffer.alloc(27);
  head.write('OggS', 0, 'latin1');
  head.writeBigInt64LE(granule, 6);
  const lacing: number[] = [];
  let left = payload.length;
  while (left >= 255) { lacing.push(255); left -= 255; }
  lacing.push(left);
  head[26] = lacing.length;
  return Buffer.concat([head, Buffer.from(lacing), payload]);
}

/** Ogg Opus: OpusHead (pre-skip 312), OpusTags, then audio pages ending at granule 312 + 48,000 × seconds. */
export function opus(seconds: number): Buffer {
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'latin1');
  head[8] = 1;
  head[9] = 1;
  head.writeUInt16LE(312, 10);
  head.writeUInt32LE(48000, 12);
  return Buffer.concat([
    oggPage(0n, head),
    oggPage(0n, Buffer.from('OpusTags\0\0\0\0\0\0\0\0', 'latin1')),
    oggPage(BigInt(312 + 24_000), Buffer.alloc(300)),
    oggPage(-1n, Buffer.alloc(10)),
    oggPage(BigInt(312 + 48_000 * seconds), Buffer.alloc(100)),
  ]);
}
