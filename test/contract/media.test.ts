/**
 * The media operations' contract at its edges: multipart fields validated and coerced by the spec, the file
 * kept out of the validated body, wrong body types, malformed multipart, and the base64 form's size limit.
 * Answers are checked against the spec by the test gateway (response validation is on).
 */
import { expect } from 'chai';
import request from 'supertest';
import { startMediaStack, type MediaStack } from '../support/media-stack.js';
import { pcmWav } from '../support/media-files.js';

describe('contract: image and transcription requests', function () {
  this.timeout(30_000);
  let s: MediaStack;
  let auth: { Authorization: string };
  let admin: { Authorization: string };

  before(async () => {
    s = await startMediaStack({ env: { UPLOAD_LIMIT: '200kb', IMAGE_DEFAULT_MODEL: 'dall-e-3' } });
    const { key } = await s.gateway.newKey(1);
    auth = { Authorization: `Bearer ${key}` };
    admin = { Authorization: `Bearer ${s.gateway.config.adminApiKey}` };
  });
  after(() => s?.close());
  beforeEach(() => s.sim.reset());

  const transcribe = () => request(s.origin).post('/v1/audio/transcriptions').set(auth);

  it('multipart fields are coerced and validated by the spec: temperature as a number, granularities as an array', async () => {
    const ok = await transcribe().attach('file', pcmWav(1), 'a.wav').field('model', 'whisper-1').field('temperature', '0.7')
      .field('response_format', 'verbose_json').field('timestamp_granularities[]', 'word');
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    expect(s.sim.calls.at(-1)!.fields).to.deep.include({ temperature: '0.7', 'timestamp_granularities[]': 'word' });

    const hot = await transcribe().attach('file', pcmWav(1), 'a.wav').field('temperature', '2');
    expect(hot.status).to.equal(422);
    expect(hot.body.detail).to.deep.equal([{ loc: ['body', 'temperature'], msg: 'must be <= 1', type: 'less_than_equal' }]);
    const word = await transcribe().attach('file', pcmWav(1), 'a.wav').field('temperature', 'warm').field('response_format', 'mp3');
    expect(word.status).to.equal(422);
    expect(word.body.detail.map((d: any) => d.loc.join('.'))).to.have.members(['body.temperature', 'body.response_format']);
    const gran = await transcribe().attach('file', pcmWav(1), 'a.wav').field('timestamp_granularities[]', 'sentence');
    expect(gran.status).to.equal(422);
    expect(gran.body.detail[0].loc).to.deep.equal(['body', 'timestamp_granularities[]', 0]);
    expect(s.sim.calls).to.have.length(1);
  });

  it('the file is required (422 body.file); a file in another field does not count', async () => {
    const none = await transcribe().field('model', 'whisper-1');
    expect(none.status, JSON.stringify(none.body)).to.equal(422);
    expect(none.body.detail).to.deep.equal([{ loc: ['body', 'file'], msg: 'Field required', type: 'missing' }]);
    const other = await transcribe().attach('audio', pcmWav(1), 'a.wav');
    expect(other.status).to.equal(422);
    expect(other.body.detail[0].loc).to.deep.equal(['body', 'file']);
  });

  it('not multipart: 415 with the Error body (JSON, or a form); an empty body is a 422', async () => {
    const json = await transcribe().send({ file: 'AAAA', model: 'whisper-1' });
    expect(json.status).to.equal(415);
    expect(json.body.error).to.include({ type: 'invalid_request_error', code: 'unsupported_media_type' });
    const b64json = await request(s.origin).post('/v1/audio/transcriptions/base64').set(auth).send({ audio_data: 'AAAA' });
    expect(b64json.status).to.equal(415);
    const empty = await transcribe();
    expect(empty.status).to.equal(422);
  });

  it('a malformed multipart body is a 400', async () => {
    const res = await transcribe().set('Content-Type', 'multipart/form-data; boundary=xyz').send('--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF');
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('invalid_multipart');
    const noBoundary = await transcribe().set('Content-Type', 'multipart/form-data').send('hello');
    expect(noBoundary.status).to.equal(400);
  });

  it('uploads over UPLOAD_LIMIT (200 KB here) are 413, multipart and base64 alike', async () => {
    const big = pcmWav(7); // 224,044 bytes
    const multi = await transcribe().attach('file', big, 'a.wav');
    expect(multi.status).to.equal(413);
    expect(multi.body.error.message).to.contain('limit of 204800 bytes');
    const b64 = await request(s.origin).post('/v1/audio/transcriptions/base64').set(auth).type('form').send({ audio_data: big.toString('base64') });
    expect(b64.status).to.equal(413);
    expect(b64.body.error.message).to.equal('The decoded audio is larger than the limit of 204800 bytes (0.2 MB).');
    const fits = await request(s.origin).post('/v1/audio/transcriptions/base64').set(auth).type('form').send({ audio_data: pcmWav(6).toString('base64') });
    expect(fits.status).to.equal(200);
  });

  it('no key: 401 before the upload is read; the admin credential has no balance: 403', async () => {
    const anon = await request(s.origin).post('/v1/audio/transcriptions').attach('file', pcmWav(1), 'a.wav');
    expect(anon.status).to.equal(401);
    const adm = await request(s.origin).post('/v1/audio/transcriptions').set(admin).attach('file', pcmWav(1), 'a.wav');
    expect(adm.status).to.equal(403);
    const img = await request(s.origin).post('/v1/images/generations').set(admin).send({ model: 'dall-e-3', prompt: 'x' });
    expect(img.status).to.equal(403);
  });

  it('images: prompt is required, size must be WxH, n 1..10; google_* ids are checked', async () => {
    const post = (body: object) => request(s.origin).post('/v1/images/generations').set(auth).send(body);
    expect((await post({ model: 'dall-e-3' })).body.detail[0].loc).to.deep.equal(['body', 'prompt']);
    const size = await post({ prompt: 'x', size: '1024' });
    expect(size.status).to.equal(422);
    expect(size.body.detail[0]).to.include({ type: 'string_pattern_mismatch' });
    const zero = await post({ prompt: 'x', size: '0x1024', model: 'test/flux' });
    expect(zero.status).to.equal(422);
    expect(zero.body.detail[0].loc).to.deep.equal(['body', 'size']);
    expect((await post({ prompt: 'x', n: 11 })).body.detail[0].loc).to.deep.equal(['body', 'n']);
    const loc = await post({ prompt: 'x', model: 'imagen-3.0-generate-002', google_project_id: 'p', google_location: 'us-central1/../x' });
    expect(loc.status).to.equal(422);
    expect(loc.body.detail[0].loc).to.deep.equal(['body', 'google_location']);
  });

  it('the configured default image model is used when none is named (IMAGE_DEFAULT_MODEL=dall-e-3)', async () => {
    const res = await request(s.origin).post('/v1/images/generations').set(auth).send({ prompt: 'a hill' });
    expect(res.status).to.equal(200);
    expect(res.body.gateway_usage).to.include({ model: 'dall-e-3', images: 1 });
  });
});
