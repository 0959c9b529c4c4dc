/** The simulator's OpenAI images and audio endpoints, and the OpenAI-spec request validator. */
import { expect } from 'chai';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { assertOpenAI, validateChatCompletionRequest } from '../support/openai-schema.js';
import { postJson } from '../support/sim-client.js';

/** A PCM WAV of `seconds` of silence: 24 kHz, mono, 16 bit (48,000 bytes a second). */
function wav(seconds: number): Buffer {
  const rate = 24_000;
  const dataLen = Math.round(seconds * rate * 2);
  const b = Buffer.alloc(44 + dataLen);
  b.write('RIFF', 0, 'ascii');
  b.writeUInt32LE(36 + dataLen, 4);
  b.write('WAVEfmt ', 8, 'ascii');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(1, 22); // mono
  b.writeUInt32LE(rate, 24);
  b.writeUInt32LE(rate * 2, 28); // byte rate
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36, 'ascii');
  b.writeUInt32LE(dataLen, 40);
  return b;
}

function form(file: Buffer, name: string, fields: Array<[string, string]>): FormData {
  const fd = new FormData();
  fd.append('file', new Blob([new Uint8Array(file)], { type: 'audio/wav' }), name);
  for (const [k, v] of fields) fd.append(k, v);
  return fd;
}

describe('simulator: OpenAI images and audio', () => {
  let sim: Simulator;
  before(async () => { sim = await startSimulator({ apiKey: 'sk-media' }); });
  after(async () => { await sim.close(); });
  beforeEach(() => sim.reset());
  const AUTH = { authorization: 'Bearer sk-media' };
  const transcribe = (fd: FormData) => fetch(`${sim.url}/v1/audio/transcriptions`, { method: 'POST', headers: AUTH, body: fd });

  it('generates images as b64_json or as URLs it serves', async () => {
    const b64 = await (await postJson(`${sim.url}/v1/images/generations`, { model: 'dall-e-3', prompt: 'an otter', response_format: 'b64_json', n: 2 }, AUTH)).json();
    assertOpenAI('ImagesResponse', b64);
    expect(b64.data).to.have.length(2);
    expect(Buffer.from(b64.data[0].b64_json, 'base64').subarray(0, 4).toString('hex')).to.equal('89504e47');
    const byUrl = await (await postJson(`${sim.url}/images/generations`, { model: 'dall-e-2', prompt: 'an otter' }, AUTH)).json();
    assertOpenAI('ImagesResponse', byUrl);
    expect(byUrl.data).to.deep.equal([{ url: `${sim.url}/files/image-2-1.png` }]);
    const png = await fetch(byUrl.data[0].url);
    expect(png.headers.get('content-type')).to.equal('image/png');
    expect(Buffer.from(await png.arrayBuffer()).subarray(1, 4).toString('ascii')).to.equal('PNG');
    const gpt = await (await postJson(`${sim.url}/v1/images/generations`, { model: 'gpt-image-1', prompt: 'x' }, AUTH)).json();
    expect(gpt.data[0]).to.have.property('b64_json');
  });

  it('image requests get the model behaviours and OpenAI errors', async () => {
    const failed = await postJson(`${sim.url}/v1/images/generations`, { model: 'sim/error-500', prompt: 'x' }, AUTH);
    expect(failed.status).to.equal(500);
    expect((await failed.json()).error.type).to.equal('server_error');
    const missing = await postJson(`${sim.url}/v1/images/generations`, { model: 'dall-e-2' }, AUTH);
    expect(missing.status).to.equal(400);
    expect((await missing.json()).error.param).to.equal('prompt');
    expect((await postJson(`${sim.url}/v1/images/generations`, { prompt: 'x' })).status).to.equal(401);
  });

  it('transcribes multipart audio as verbose_json with the WAV duration, segments and words', async () => {
    const audio = wav(1.5);
    const res = await transcribe(form(audio, 'clip.wav', [
      ['model', 'whisper-1'], ['response_format', 'verbose_json'], ['language', 'en'],
      ['timestamp_granularities[]', 'word'], ['timestamp_granularities[]', 'segment'],
    ]));
    expect(res.status).to.equal(200);
    const body = await res.json();
    assertOpenAI('CreateTranscriptionResponseVerboseJson', body);
    expect(body).to.deep.include({ language: 'en', duration: 1.5, text: `Transcribed ${audio.length} bytes of clip.wav` });
    expect(body.words).to.have.length(5);
    expect(body.words[4]).to.deep.equal({ word: 'clip.wav', start: 1.2, end: 1.5 });
    expect(body.segments[0]).to.deep.include({ id: 0, start: 0, end: 1.5 });
    const call = sim.calls[0];
    expect(call.model).to.equal('whisper-1');
    expect(call.fields).to.deep.include({ model: 'whisper-1', 'timestamp_granularities[]': ['word', 'segment'] });
    expect(call.files).to.deep.equal([{ field: 'file', filename: 'clip.wav', mimeType: 'audio/wav', size: audio.length }]);
  });

  it('answers json and text transcriptions; non-WAV audio counts 16,000 bytes a second', async () => {
    const mp3 = Buffer.alloc(32_000, 1);
    const json = await (await transcribe(form(mp3, 'a.mp3', [['model', 'whisper-1']]))).json();
    assertOpenAI('CreateTranscriptionResponseJson', json);
    expect(json).to.deep.equal({ text: 'Transcribed 32000 bytes of a.mp3', usage: { type: 'duration', seconds: 2 } });
    const text = await transcribe(form(mp3, 'a.mp3', [['model', 'whisper-1'], ['response_format', 'text']]));
    expect(text.headers.get('content-type')).to.match(/^text\/plain/);
    expect(await text.text()).to.equal('Transcribed 32000 bytes of a.mp3\n');
    const noFile = new FormData();
    noFile.append('model', 'whisper-1');
    const missing = await transcribe(noFile);
    expect(missing.status).to.equal(400);
    expect((await missing.json()).error.param).to.equal('file');
    expect((await transcribe(form(mp3, 'a.mp3', [['model', 'sim/error-429']]))).status).to.equal(429);
  });

  it('speaks MP3 frames, one per input word', async () => {
    const res = await postJson(`${sim.url}/v1/audio/speech`, { model: 'tts-1', input: 'hello there world', voice: 'alloy' }, AUTH);
    expect(res.headers.get('content-type')).to.equal('audio/mpeg');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.length).to.equal(3 * 417);
    expect(bytes.subarray(0, 2).toString('hex')).to.equal('fffb');
    const wavRes = await postJson(`${sim.url}/v1/audio/speech`, { model: 'tts-1', input: 'x', voice: 'alloy', response_format: 'wav' }, AUTH);
    expect(wavRes.headers.get('content-type')).to.equal('audio/wav');
    const noVoice = await postJson(`${sim.url}/v1/audio/speech`, { model: 'tts-1', input: 'x' }, AUTH);
    expect(noVoice.status).to.equal(400);
    expect((await noVoice.json()).error.param).to.equal('voice');
  });
});

describe('OpenAI spec validator', () => {
  it('accepts a real CreateChatCompletionRequest', () => {
    const body = {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'ok' },
      ],
      tools: [{ type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { query: { type: 'string' } } } } }],
      tool_choice: 'auto',
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      max_completion_tokens: 100,
      stop: ['END'],
      logprobs: true,
      top_logprobs: 2,
      user: 'u1',
    };
    expect(validateChatCompletionRequest(body)).to.deep.equal({ ok: true, errors: [] });
    expect(validateChatCompletionRequest({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stop: null, n: null }).ok).to.equal(true);
  });

  it('rejects bodies OpenAI would reject, naming the field', () => {
    const missing = validateChatCompletionRequest({ model: 'gpt-4o' });
    expect(missing.ok).to.equal(false);
    expect(missing.errors).to.include("/ must have required property 'messages'");
    expect(validateChatCompletionRequest({ model: 'gpt-4o', messages: [] }).errors).to.include('/messages must NOT have fewer than 1 items');
    const wrong = validateChatCompletionRequest({ model: 'gpt-4o', messages: [{ role: 'robot', content: 'hi' }], temperature: 'hot' });
    expect(wrong.ok).to.equal(false);
    expect(wrong.errors).to.include('/temperature must be number');
    expect(wrong.errors.some((e) => e.startsWith('/messages/0'))).to.equal(true);
    expect(validateChatCompletionRequest({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], temperature: 3 }).errors).to.include('/temperature must be <= 2');
  });
});
