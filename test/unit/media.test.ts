/** Media building blocks: format sniffing, WebM duration, the base64 form's decoder, image profiles and prices. */
import { expect } from 'chai';
import { checkAudio, sniffContainer } from '../../src/media/formats.js';
import { audioDuration, webmDuration } from '../../src/media/duration.js';
import { decodeAudioBase64 } from '../../src/media/upload.js';
import { DEFAULT_PROFILE, imagePriceUsd, imageProfile, profileProblem } from '../../src/media/image-profiles.js';
import { ApiError, ValidationFailure } from '../../src/errors.js';
import { mp3, oggOpus, pcmWav, webmOpus } from '../support/media-files.js';

const thrown = (fn: () => unknown): any => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
};

describe('media: audio format by content', () => {
  const cases: Array<[string, Buffer, string | null]> = [
    ['WAV', pcmWav(0.1), 'wav'],
    ['MP3 with an ID3 tag', mp3(3), 'mp3'],
    ['MP3 frames without a tag', mp3(3).subarray(mp3(0).length), 'mp3'],
    ['Ogg', oggOpus(1), 'ogg'],
    ['WebM (EBML)', webmOpus(1), 'webm'],
    ['FLAC', Buffer.concat([Buffer.from('fLaC'), Buffer.alloc(40)]), 'flac'],
    ['FLAC behind an ID3 tag', Buffer.concat([Buffer.from('ID3'), Buffer.from([3, 0, 0, 0, 0, 0, 2]), Buffer.alloc(2), Buffer.from('fLaC')]), 'flac'],
    ['M4A (ftyp M4A)', Buffer.concat([Buffer.from([0, 0, 0, 0x20]), Buffer.from('ftypM4A '), Buffer.alloc(20)]), 'mp4'],
    ['AAC ADTS (layer bits 00) is not MPEG audio', Buffer.from([0xff, 0xf1, 0x50, 0x80, 0, 0, 0]), null],
    ['"ID3" followed by text', Buffer.from('ID3 tags are metadata, and this is a text file about them'), null],
    ['plain text', Buffer.from('hello, this is a text file'), null],
    ['a PNG', Buffer.from('89504e470d0a1a0a0000', 'hex'), null],
  ];
  for (const [name, bytes, want] of cases) {
    it(`${name} → ${want ?? 'unsupported'}`, () => expect(sniffContainer(bytes)).to.equal(want));
  }

  it('renames the file so its extension matches its bytes, keeping an extension of the same family', () => {
    expect(checkAudio(pcmWav(0.1), 'talk.mp3', 'file')).to.include({ filename: 'talk.wav', ext: 'wav', mimeType: 'audio/wav' });
    expect(checkAudio(mp3(2), 'talk.mpga', 'file')).to.include({ filename: 'talk.mpga', ext: 'mpga', mimeType: 'audio/mpeg' });
    expect(checkAudio(mp3(2), 'noext', 'file')).to.include({ filename: 'noext.mp3' });
    expect(checkAudio(webmOpus(1), '../../etc/pa"ss.webm', 'file').filename).to.equal('pa_ss.webm');
  });

  it('empty and unsupported files are 400s naming the field; the message lists the formats', () => {
    const empty = thrown(() => checkAudio(Buffer.alloc(0), 'a.wav', 'file'));
    expect(empty).to.be.instanceOf(ApiError);
    expect(empty).to.include({ status: 400, code: 'empty_file', param: 'file' });
    const text = thrown(() => checkAudio(Buffer.from('not audio at all'), 'a.mp3', 'audio_data'));
    expect(text).to.include({ status: 400, code: 'unsupported_audio_format', param: 'audio_data' });
    expect(text.message).to.contain('Supported formats: flac, m4a, mp3, mp4, mpeg, mpga, ogg, wav, webm.');
  });
});

describe('media: duration from the file', () => {
  it('WAV, MP3, Ogg Opus through music-metadata; WebM through the EBML walk', async () => {
    const of = (b: Buffer, name: string) => audioDuration(checkAudio(b, name, 'file'));
    expect(await of(pcmWav(2.5), 'a.wav')).to.equal(2.5);
    expect(await of(mp3(2500), 'a.mp3')).to.equal(60);
    expect(await of(oggOpus(4), 'a.ogg')).to.equal(4);
    expect(await of(webmOpus(3.2), 'a.webm')).to.equal(3.2);
    expect(await of(Buffer.concat([Buffer.from([0, 0, 0, 0x20]), Buffer.from('ftypM4A '), Buffer.alloc(20)]), 'a.m4a')).to.equal(null);
  });

  it('WebM: the declared Duration wins; without one the last block plus one block interval; cut files count what is there', () => {
    expect(webmDuration(webmOpus(2, { withDuration: true }))).to.equal(2);
    expect(webmDuration(webmOpus(2))).to.equal(2);
    const full = webmOpus(3);
    // cut inside the third cluster: blocks up to 2.5 s or so remain
    const cut = webmDuration(full.subarray(0, Math.floor(full.length * 0.85)));
    expect(cut).to.be.above(2).and.below(3);
    expect(webmDuration(webmOpus(0))).to.equal(null);
    expect(webmDuration(Buffer.from([0x1a, 0x45, 0xdf]))).to.equal(null);
  });
});

describe('media: the base64 form', () => {
  const audio = webmOpus(1);
  it('decodes raw base64, with or without padding, ignoring line breaks', () => {
    const b64 = audio.toString('base64');
    expect(decodeAudioBase64(b64, 1e6).equals(audio)).to.equal(true);
    expect(decodeAudioBase64(b64.replace(/=+$/, ''), 1e6).equals(audio)).to.equal(true);
    expect(decodeAudioBase64(b64.replace(/(.{76})/g, '$1\r\n'), 1e6).equals(audio)).to.equal(true);
  });

  it('a data: URL or a foreign character is a 422 on body.audio_data; more than the limit a 413', () => {
    const prefixed = thrown(() => decodeAudioBase64(`data:audio/webm;base64,${audio.toString('base64')}`, 1e6));
    expect(prefixed).to.be.instanceOf(ValidationFailure);
    expect(prefixed.detail[0]).to.deep.include({ loc: ['body', 'audio_data'], type: 'data_url_prefix' });
    const urlSafe = thrown(() => decodeAudioBase64('ab-_', 1e6));
    expect(urlSafe.detail[0].msg).to.equal('audio_data is not valid base64: character "-" at position 2 is not in the base64 alphabet.');
    const big = thrown(() => decodeAudioBase64(Buffer.alloc(1001).toString('base64'), 1000));
    expect(big).to.include({ status: 413, code: 'payload_too_large' });
    expect(decodeAudioBase64(Buffer.alloc(1000).toString('base64'), 1000)).to.have.length(1000);
  });
});

describe('media: image profiles and prices', () => {
  it('profiles by upstream model id; unknown models get the default', () => {
    expect(imageProfile('dall-e-3').name).to.equal('dall-e-3');
    expect(imageProfile('openai/dall-e-2').name).to.equal('dall-e-2');
    expect(imageProfile('gpt-image-1-mini').name).to.equal('gpt-image');
    expect(imageProfile('black-forest-labs/FLUX.1-schnell')).to.equal(DEFAULT_PROFILE);
  });

  it('price × max(1, pixels / 1024²) × quality factor', () => {
    const d3 = imageProfile('dall-e-3');
    expect(imagePriceUsd(0.04, d3, 1024, 1024, 'standard')).to.equal(0.04);
    expect(imagePriceUsd(0.04, d3, 1024, 1024, 'hd')).to.equal(0.08);
    expect(imagePriceUsd(0.04, d3, 1792, 1024, 'standard')).to.be.closeTo(0.07, 1e-15);
    expect(imagePriceUsd(0.02, imageProfile('dall-e-2'), 256, 256, 'standard')).to.equal(0.02);
    expect(imagePriceUsd(0.04, imageProfile('gpt-image-1'), 1024, 1024, 'high')).to.equal(0.16);
    expect(imagePriceUsd(0.01, DEFAULT_PROFILE, 2048, 2048, 'standard')).to.equal(0.04);
  });

  it('size, n and quality problems name the parameter and what the model supports', () => {
    const d3 = imageProfile('dall-e-3');
    expect(profileProblem(d3, 1024, 1024, 1, 'hd')).to.equal(null);
    expect(profileProblem(d3, 512, 512, 1, 'standard')).to.deep.equal({ param: 'size', msg: 'size 512x512 is not supported by this model; supported sizes: 1024x1024, 1792x1024, 1024x1792' });
    expect(profileProblem(d3, 1024, 1024, 2, 'standard')!.param).to.equal('n');
    expect(profileProblem(d3, 1024, 1024, 1, 'high')!.msg).to.contain('supported: standard, hd');
    expect(profileProblem(DEFAULT_PROFILE, 4096, 512, 1, 'standard')!.msg).to.contain('between 64 and 2048');
    expect(profileProblem(DEFAULT_PROFILE, 768, 512, 4, 'auto')).to.equal(null);
  });
});
