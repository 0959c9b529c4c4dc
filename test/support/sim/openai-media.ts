/**
 * OpenAI images and audio: image generation (b64_json or a URL this simulator serves), transcriptions
 * (multipart; json / text / srt / vtt / verbose_json) and speech (MP3 bytes). The model name's gate behaviours
 * (error, flaky, slow, hang, malformed) apply here too.
 */
import { behaviourOf, words } from './behaviour.js';
import { gate, nowSeconds, sendJson, sendMalformed, sendRaw, type SimRequest } from './io.js';
import { openaiError } from './openai.js';

/** A valid 1×1 PNG. */
export const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

const errorWriter = (sr: SimRequest) => (s: number, m: string, h?: Record<string, string>) => openaiError(sr, s, m, h);

export async function openaiImages(sr: SimRequest): Promise<void> {
  const body = sr.call.body;
  if (!body || typeof body.prompt !== 'string' || !body.prompt) return openaiError(sr, 400, "Missing required parameter: 'prompt'.", {}, 'prompt');
  const n = body.n ?? 1;
  if (!Number.isInteger(n) || n < 1 || n > 10) return openaiError(sr, 400, `Invalid 'n': ${n}. Expected a value between 1 and 10.`, {}, 'n');
  const model = typeof body.model === 'string' ? body.model : 'dall-e-2';
  if (!(await gate(sr, model, errorWriter(sr)))) return;
  if (behaviourOf(model).kind === 'malformed') return sendMalformed(sr.res);
  // GPT image models always answer base64; DALL·E defaults to a URL (OpenAI's documented defaults).
  const format = body.response_format ?? (model.startsWith('gpt-image') ? 'b64_json' : 'url');
  const data = Array.from({ length: n }, (_, i) =>
    format === 'b64_json' ? { b64_json: PNG_1X1.toString('base64') } : { url: `${sr.state.baseUrl}/files/image-${sr.seq}-${i + 1}.png` },
  );
  sendJson(sr.res, 200, { created: nowSeconds(), data });
}

/** GET /files/<name>.png: the image behind every generated URL. */
export function servePng(sr: SimRequest): void {
  sendRaw(sr.res, 200, 'image/png', PNG_1X1);
}

/**
 * Audio length in seconds: exact for a PCM WAV (data bytes / byte rate); otherwise the size at 128 kbit/s
 * (16,000 bytes a second), so a test can pick the duration it bills by choosing the upload size.
 */
export function audioSeconds(file: Buffer): number {
  if (file.length >= 44 && file.toString('ascii', 0, 4) === 'RIFF' && file.toString('ascii', 8, 12) === 'WAVE') {
    let off = 12;
    let byteRate = 0;
    while (off + 8 <= file.length) {
      const id = file.toString('ascii', off, off + 4);
      const size = file.readUInt32LE(off + 4);
      if (id === 'fmt ') byteRate = file.readUInt32LE(off + 16);
      if (id === 'data' && byteRate) return Math.min(size, file.length - off - 8) / byteRate;
      off += 8 + size + (size % 2);
    }
  }
  return file.length / 16_000;
}

const stamp = (s: number, sep: string) => {
  const ms = Math.round(s * 1000);
  const p = (v: number, w = 2) => String(v).padStart(w, '0');
  return `${p(Math.floor(ms / 3_600_000))}:${p(Math.floor(ms / 60_000) % 60)}:${p(Math.floor(ms / 1000) % 60)}${sep}${p(ms % 1000, 3)}`;
};

export async function openaiTranscription(sr: SimRequest): Promise<void> {
  const fields = sr.call.fields ?? {};
  const file = sr.call.files?.find((f) => f.field === 'file');
  const model = typeof fields.model === 'string' ? fields.model : undefined;
  if (!file) return openaiError(sr, 400, "Missing required parameter: 'file'.", {}, 'file');
  if (!model) return openaiError(sr, 400, "Missing required parameter: 'model'.", {}, 'model');
  if (!(await gate(sr, model, errorWriter(sr)))) return;
  if (behaviourOf(model).kind === 'malformed') return sendMalformed(sr.res);

  const bytes = sr.fileData?.get('file') ?? Buffer.alloc(0);
  const duration = Math.round(audioSeconds(bytes) * 1000) / 1000;
  const text = `Transcribed ${file.size} bytes of ${file.filename}`;
  const format = typeof fields.response_format === 'string' ? fields.response_format : 'json';
  const usage = { type: 'duration', seconds: Math.ceil(duration) };
  switch (format) {
    case 'json':
      return sendJson(sr.res, 200, { text, usage });
    case 'text':
      return sendRaw(sr.res, 200, 'text/plain; charset=utf-8', `${text}\n`);
    case 'srt':
      return sendRaw(sr.res, 200, 'text/plain; charset=utf-8', `1\n${stamp(0, ',')} --> ${stamp(duration, ',')}\n${text}\n\n`);
    case 'vtt':
      return sendRaw(sr.res, 200, 'text/plain; charset=utf-8', `WEBVTT\n\n${stamp(0, '.')} --> ${stamp(duration, '.')}\n${text}\n\n`);
    case 'verbose_json': {
      const list = text.split(' ');
      const step = duration / list.length;
      const at = (v: number) => Math.round(v * 1000) / 1000;
      return sendJson(sr.res, 200, {
        task: 'transcribe',
        language: typeof fields.language === 'string' ? fields.language : 'english',
        duration,
        text,
        words: list.map((word, i) => ({ word, start: at(i * step), end: at((i + 1) * step) })),
        segments: [{ id: 0, seek: 0, start: 0, end: duration, text: ` ${text}`, tokens: list.map((_, i) => 1000 + i), temperature: 0, avg_logprob: -0.25, compression_ratio: 1, no_speech_prob: 0.01 }],
        usage,
      });
    }
    default:
      return openaiError(sr, 400, `Invalid 'response_format': '${format}'.`, {}, 'response_format');
  }
}

const AUDIO_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg', opus: 'audio/opus', aac: 'audio/aac', flac: 'audio/flac', wav: 'audio/wav', pcm: 'audio/pcm',
};

/**
 * Speech bytes: MPEG-1 Layer III frame headers (128 kbit/s, 44.1 kHz) over silence, one 417-byte frame per
 * input word, so the size tracks the input. Other formats get the same bytes under their content type.
 */
export function speechBytes(input: string): Buffer {
  const frame = Buffer.alloc(417);
  frame.set([0xff, 0xfb, 0x90, 0x64]);
  return Buffer.concat(Array.from({ length: Math.max(1, words(input)) }, () => frame));
}

export async function openaiSpeech(sr: SimRequest): Promise<void> {
  const body = sr.call.body;
  // `voice` may be a name or a custom-voice object, so only its presence is checked.
  for (const f of ['model', 'input', 'voice']) {
    const ok = f === 'voice' ? body?.voice != null && body.voice !== '' : typeof body?.[f] === 'string' && body[f] !== '';
    if (!ok) return openaiError(sr, 400, `Missing required parameter: '${f}'.`, {}, f);
  }
  const format = body.response_format ?? 'mp3';
  if (!AUDIO_TYPES[format]) return openaiError(sr, 400, `Invalid 'response_format': '${format}'.`, {}, 'response_format');
  if (!(await gate(sr, body.model, errorWriter(sr)))) return;
  sendRaw(sr.res, 200, AUDIO_TYPES[format], speechBytes(body.input));
}
