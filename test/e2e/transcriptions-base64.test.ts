/**
 * POST /v1/audio/transcriptions/base64 as a browser calls it after MediaRecorder: fetch() with a URLSearchParams
 * body (application/x-www-form-urlencoded;charset=UTF-8) carrying the recording as raw base64. The WebM is
 * written the way MediaRecorder streams it (unknown sizes, no Duration); whisper-1 costs $0.006 a minute.
 */
import { expect } from 'chai';
import { startMediaStack, type MediaStack } from '../support/media-stack.js';
import { oggOpus, webmOpus } from '../support/media-files.js';

const NANO = 1e9;

describe('e2e: /v1/audio/transcriptions/base64 from a browser', function () {
  this.timeout(30_000);
  let s: MediaStack;
  let key: string;
  let userId: number;

  before(async () => {
    s = await startMediaStack();
    ({ key, userId } = await s.gateway.newKey(1));
  });
  after(() => s?.close());
  beforeEach(() => s.sim.reset());

  const balance = () => s.gateway.store.credits.balance(userId);
  const post = async (fields: Record<string, string>) => {
    const res = await fetch(`${s.origin}/v1/audio/transcriptions/base64`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: new URLSearchParams(fields) });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('a MediaRecorder WebM without a Duration: its length is read from the blocks, billed per minute', async () => {
    const webm = webmOpus(5);
    const before = await balance();
    const { status, body } = await post({ audio_data: webm.toString('base64'), model: 'whisper-1', language: 'en' });
    expect(status).to.equal(200);
    expect(body.text).to.equal(`Transcribed ${webm.length} bytes of recording.webm`);
    expect(body.gateway_usage).to.include({ gateway: 'openai', duration_seconds: 5, duration_source: 'file', cost_usd: 0.0005 });
    expect(await balance()).to.equal(before - 0.0005 * NANO);
    const call = s.sim.calls.at(-1)!;
    expect(call.files).to.deep.equal([{ field: 'file', filename: 'recording.webm', mimeType: 'audio/webm', size: webm.length }]);
    expect(call.fields).to.deep.include({ model: 'whisper-1', language: 'en' });
  });

  it('an Ogg Opus recording under its own file name, with form-encoded temperature and response_format', async () => {
    const { status, body } = await post({ audio_data: oggOpus(3).toString('base64'), filename: 'clip.ogg', temperature: '0.5', response_format: 'verbose_json' });
    expect(status).to.equal(200);
    expect(body.language).to.equal('english');
    expect(body.gateway_usage).to.include({ model: 'whisper-1', duration_seconds: 3, duration_source: 'file' });
    expect(s.sim.calls.at(-1)!.fields).to.deep.include({ temperature: '0.5', response_format: 'verbose_json' });
    expect(s.sim.calls.at(-1)!.files![0].filename).to.equal('clip.ogg');
  });

  it('a recording whose file states no duration: the upstream\'s reported duration, else the size estimate', async () => {
    const headerOnly = webmOpus(0); // EBML header, Info and Tracks: no blocks yet
    const json = await post({ audio_data: headerOnly.toString('base64') });
    expect(json.status).to.equal(200);
    // the simulator reports usage.seconds = ceil(bytes / 16000) for non-WAV audio
    expect(json.body.gateway_usage).to.include({ duration_seconds: 1, duration_source: 'upstream', cost_usd: 0.0001 });
    const text = await post({ audio_data: headerOnly.toString('base64'), response_format: 'text' });
    const estimate = Math.round((headerOnly.length / 16_000) * 1000) / 1000;
    expect(text.body.gateway_usage).to.include({ duration_seconds: estimate, duration_source: 'size_estimate' });
  });

  it('a data: URL prefix is a 422 that says so; nothing is charged or sent upstream', async () => {
    const before = await balance();
    const { status, body } = await post({ audio_data: `data:audio/webm;codecs=opus;base64,${webmOpus(1).toString('base64')}` });
    expect(status).to.equal(422);
    expect(body.detail).to.have.length(1);
    expect(body.detail[0]).to.include({ type: 'data_url_prefix' });
    expect(body.detail[0].loc).to.deep.equal(['body', 'audio_data']);
    expect(body.detail[0].msg).to.contain('without a data: URL prefix');
    expect(await balance()).to.equal(before);
    expect(s.sim.calls).to.have.length(0);
  });

  it('invalid base64 is a 422 naming the offending character', async () => {
    const { status, body } = await post({ audio_data: 'GkXfo$$$AAAA' });
    expect(status).to.equal(422);
    expect(body.detail[0].loc).to.deep.equal(['body', 'audio_data']);
    expect(body.detail[0].msg).to.equal('audio_data is not valid base64: character "$" at position 5 is not in the base64 alphabet.');
    const short = await post({ audio_data: 'GkXfo' });
    expect(short.body.detail[0].msg).to.equal('audio_data is not valid base64: its length or padding is wrong.');
  });

  it('base64 of something that is not audio is a 400 listing the formats', async () => {
    const { status, body } = await post({ audio_data: Buffer.from('<html>not audio</html>').toString('base64') });
    expect(status).to.equal(400);
    expect(body.error.code).to.equal('unsupported_audio_format');
    expect(body.error.param).to.equal('audio_data');
    expect(body.error.message).to.contain('Supported formats: flac, m4a, mp3, mp4, mpeg, mpga, ogg, wav, webm.');
  });
});
