import { expect } from 'chai';
import { audioDuration, mp3Duration, opusDuration, wavDuration } from '../../src/tools/audio.js';
import { mp3Frames, opus, wav } from '../support/audio.js';

describe('audio durations from the bytes', () => {
  it('MP3: sums the frames after the ID3 tag (100 × 1152 samples at 44.1 kHz = 2.612 s)', () => {
    expect(audioDuration('mp3', mp3Frames(100))).to.equal(2.612);
    expect(mp3Duration(mp3Frames(441))).to.be.closeTo((441 * 1152) / 44100, 1e-9);
  });

  it('MP3: an MPEG-2 layer III frame counts 576 samples', () => {
    // MPEG-2 (24 kHz), layer III, 64 kbit/s: 72 × 64000 / 24000 = 192 bytes a frame.
    const frame = Buffer.alloc(192);
    frame.set([0xff, 0xf3, 0x84, 0xc4]);
    expect(mp3Duration(Buffer.concat(Array.from({ length: 50 }, () => frame)))).to.be.closeTo((50 * 576) / 24000, 1e-9);
  });

  it('WAV: data bytes over the byte rate, skipping other chunks; an unknown streamed size counts what is there', () => {
    expect(wavDuration(wav(64000))).to.equal(2);
    expect(wavDuration(wav(16000, 0xffffffff))).to.equal(0.5);
  });

  it('Opus: last granule position minus pre-skip, at 48 kHz', () => {
    expect(opusDuration(opus(3))).to.equal(3);
  });

  it('bytes that are not the claimed format give null', () => {
    const junk = Buffer.from('this is not audio at all, just some text bytes');
    expect(audioDuration('mp3', junk)).to.equal(null);
    expect(audioDuration('wav', junk)).to.equal(null);
    expect(audioDuration('opus', junk)).to.equal(null);
    expect(audioDuration('wav', mp3Frames(3))).to.equal(null);
  });
});
