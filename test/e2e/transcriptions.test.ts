/**
 * POST /v1/audio/transcriptions with the official OpenAI SDK and real audio files made by the tests (a PCM WAV,
 * an MP3, an Ogg Opus stream; test/support/media-files.ts), the gateway in front of the upstream simulator.
 * Prices: whisper-1 $0.006 a minute, whisper-large-v3 (on groq) $0.02 a minute; duration from the file.
 * The money tests run on SQLite and PostgreSQL.
 */
import { expect } from 'chai';
import { APIError, toFile } from 'openai';
import { startMediaStack, type MediaStack } from '../support/media-stack.js';
import { mp3, oggOpus, pcmWav } from '../support/media-files.js';
import { DIALECTS, postgresAvailable } from '../support/db.js';
import { usageRows as recordedUsage } from '../support/e2e.js';

const NANO = 1e9;

async function refusal(p: Promise<unknown>): Promise<APIError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof APIError) return err;
    throw err;
  }
  throw new Error('expected the request to fail');
}

for (const dialect of DIALECTS) {
  describe(`e2e: transcription billing with the OpenAI SDK (${dialect})`, function () {
    this.timeout(30_000);
    let s: MediaStack;
    let key: string;
    let userId: number;

    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      s = await startMediaStack({ dialect });
      ({ key, userId } = await s.gateway.newKey(1));
    });
    after(() => s?.close());
    beforeEach(() => s?.sim.reset());

    const balance = () => s.gateway.store.credits.balance(userId);
    const usageRows = () => recordedUsage(s.gateway, userId);

    it('a 60 s WAV: the transcript, and exactly one minute at $0.006 deducted after success', async () => {
      const before = await balance();
      const { data: res, response } = await s.client(key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(pcmWav(60), 'speech.wav') }).withResponse();
      expect(res.text).to.equal('Transcribed 1920044 bytes of speech.wav');
      expect((res as any).gateway_usage).to.deep.include({ gateway: 'openai', provider: 'openai', model: 'whisper-1', duration_seconds: 60, duration_source: 'file', cost_usd: 0.006 });
      expect(response.headers.get('x-gateway-model')).to.equal('whisper-1');
      expect(await balance()).to.equal(before - 6_000_000);
      expect(await s.gateway.store.credits.openHoldCount(userId)).to.equal(0);
      const call = s.sim.calls.at(-1)!;
      expect(call.path).to.equal('/v1/audio/transcriptions');
      expect(call.fields).to.deep.include({ model: 'whisper-1', response_format: 'json' });
      expect(call.files).to.deep.equal([{ field: 'file', filename: 'speech.wav', mimeType: 'audio/wav', size: 1920044 }]);
      const row = (await usageRows()).at(-1)!;
      expect(row).to.include({ endpoint: 'audio.transcriptions', gateway: 'openai', model: 'openai/whisper-1', status: 'success' });
      expect(Number(row.cost_nano)).to.equal(6_000_000);
    });

    it('an upstream failure costs nothing: 502, balance unchanged, the hold released, an error usage record', async () => {
      const before = await balance();
      const err = await refusal(s.client(key).audio.transcriptions.create({ model: 'test/whisper-broken', file: await toFile(pcmWav(30), 'a.wav') }));
      expect(err.status).to.equal(502);
      expect(await balance()).to.equal(before);
      expect(await s.gateway.store.credits.openHoldCount(userId)).to.equal(0);
      const row = (await usageRows()).at(-1)!;
      expect(row).to.include({ endpoint: 'audio.transcriptions', status: 'error', http_status: 502 });
      expect(Number(row.cost_nano)).to.equal(0);
    });
  });
}

describe('e2e: /v1/audio/transcriptions with the OpenAI SDK', function () {
  this.timeout(60_000);
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

  it('a 30 s MP3 (ID3 tag + MPEG frames) on groq: 30 s at $0.02 a minute', async () => {
    const before = await balance();
    const res = await s.client(key).audio.transcriptions.create({ model: 'whisper-large-v3', file: await toFile(mp3(1250), 'note.mp3'), language: 'en', prompt: 'names: Ada', temperature: 0.2 });
    expect((res as any).gateway_usage).to.deep.include({ gateway: 'groq', duration_seconds: 30, duration_source: 'file', cost_usd: 0.01 });
    expect(await balance()).to.equal(before - 0.01 * NANO);
    const call = s.sim.calls.at(-1)!;
    expect(call.fields).to.deep.equal({ model: 'whisper-large-v3', response_format: 'json', language: 'en', prompt: 'names: Ada', temperature: '0.2' });
    expect(call.files![0]).to.include({ filename: 'note.mp3', mimeType: 'audio/mpeg', size: mp3(1250).length });
  });

  it('a 12 s Ogg Opus as verbose_json with word and segment timestamps: language, duration, segments, words', async () => {
    const file = oggOpus(12);
    const res: any = await s.client(key).audio.transcriptions.create({
      model: 'whisper-1', file: await toFile(file, 'memo.ogg'), response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'], language: 'en',
    });
    expect(res.text).to.equal(`Transcribed ${file.length} bytes of memo.ogg`);
    expect(res.language).to.equal('en');
    // the simulator times non-WAV audio by size; the gateway bills the file's own 12 s
    expect(res.duration).to.be.a('number');
    expect(res.segments).to.have.length(1);
    expect(res.words.map((w: any) => w.word)).to.deep.equal(res.text.split(' '));
    expect(res.gateway_usage).to.include({ duration_seconds: 12, duration_source: 'file', cost_usd: 0.0012 });
    expect(s.sim.calls.at(-1)!.fields!['timestamp_granularities[]']).to.deep.equal(['word', 'segment']);
  });

  it('text, srt and vtt: the transcript in that format is the JSON answer\'s text', async () => {
    const text: any = await s.client(key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(pcmWav(2), 'a.wav'), response_format: 'text' });
    expect(text.text).to.equal('Transcribed 64044 bytes of a.wav\n');
    const srt: any = await s.client(key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(pcmWav(2), 'a.wav'), response_format: 'srt' });
    expect(srt.text).to.equal('1\n00:00:00,000 --> 00:00:02,000\nTranscribed 64044 bytes of a.wav\n\n');
    const vtt: any = await s.client(key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(pcmWav(2), 'a.wav'), response_format: 'vtt' });
    expect(vtt.text).to.match(/^WEBVTT\n\n00:00:00\.000 --> 00:00:02\.000\n/);
    expect(vtt.gateway_usage).to.include({ duration_seconds: 2, duration_source: 'file' });
  });

  it('the format is judged by content: a WAV named .mp3 goes upstream as .wav; a text file named .mp3 is a 400', async () => {
    await s.client(key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(pcmWav(1), 'mislabelled.mp3') });
    expect(s.sim.calls.at(-1)!.files![0]).to.include({ filename: 'mislabelled.wav', mimeType: 'audio/wav' });
    s.sim.reset();
    const before = await balance();
    const err = await refusal(s.client(key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(Buffer.from('just some notes, not audio\n'.repeat(50)), 'notes.mp3') }));
    expect(err.status).to.equal(400);
    expect((err.error as any).code).to.equal('unsupported_audio_format');
    expect(err.message).to.contain('flac, m4a, mp3, mp4, mpeg, mpga, ogg, wav, webm');
    const empty = await refusal(s.client(key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(Buffer.alloc(0), 'empty.wav') }));
    expect(empty.status).to.equal(400);
    expect(empty.message).to.contain('empty');
    expect(s.sim.calls).to.have.length(0);
    expect(await balance()).to.equal(before);
  });

  it('a 26 MB upload is a 413 with the Error body; nothing goes upstream (memory: upload-limit.test.ts)', async () => {
    const big = Buffer.alloc(26 * 1024 * 1024);
    mp3(10).copy(big);
    const err = await refusal(s.client(key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(big, 'long.mp3') }));
    expect(err.status).to.equal(413);
    expect(err.error).to.include({ type: 'invalid_request_error', code: 'payload_too_large' });
    expect(err.message).to.contain('limit of 26214400 bytes');
    expect(s.sim.calls).to.have.length(0);
  });

  it('a provider that cannot transcribe is a 400 naming it; a chat model too; an unknown model is a 404', async () => {
    const pinned = await refusal(s.client(key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(pcmWav(1), 'a.wav'), provider: 'anthropic' } as any));
    expect(pinned.status).to.equal(400);
    expect(pinned.message).to.contain("Provider 'anthropic' cannot transcribe audio");
    const only = await refusal(s.client(key).audio.transcriptions.create({ model: 'test/anthropic-audio', file: await toFile(pcmWav(1), 'a.wav') }));
    expect(only.message).to.contain('offered only by anthropic');
    const chat = await refusal(s.client(key).audio.transcriptions.create({ model: 'test/echo', file: await toFile(pcmWav(1), 'a.wav') }));
    expect([chat.status, chat.message]).to.deep.equal([400, "400 The model 'test/echo' cannot transcribe audio."]);
    const unknown = await refusal(s.client(key).audio.transcriptions.create({ model: 'nope/none', file: await toFile(pcmWav(1), 'a.wav') }));
    expect(unknown.status).to.equal(404);
  });

  it('402 when the balance cannot cover the audio\'s minutes; the upstream is not called', async () => {
    const poor = await s.gateway.newKey(0.005, 'poor');
    const err = await refusal(s.client(poor.key).audio.transcriptions.create({ model: 'whisper-1', file: await toFile(pcmWav(60), 'a.wav') }));
    expect(err.status).to.equal(402);
    expect(err.message).to.contain('$0.006000');
    expect(s.sim.calls).to.have.length(0);
  });
});
