/**
 * text_to_speech over an OpenAI-compatible speech API: `POST {TTS_BASE_URL}/audio/speech` with
 * `{model, input, voice, response_format, speed}`; the answer is the audio file itself. The tool returns it as
 * base64 with its format, size and duration (read from the audio's own headers, see audio.ts).
 * Billed per 1,000 input characters.
 */
import type { ToolsConfig } from '../config.js';
import { UpstreamError } from '../engine/types.js';
import { send } from '../providers/http.js';
import { usdToNano } from '../store/credits.js';
import { audioDuration } from './audio.js';
import type { BuiltinTool } from './registry.js';

const VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse'];
const CONTENT_TYPES = { mp3: 'audio/mpeg', wav: 'audio/wav', opus: 'audio/ogg' } as const;
const MAX_AUDIO_BYTES = 64 * 1024 * 1024;

interface TtsParams {
  text: string;
  voice: string;
  format: 'mp3' | 'wav' | 'opus';
  speed: number;
}

/** Characters as the upstream counts them (code points, not UTF-16 units). */
export const characters = (text: string) => [...text].length;

async function readBytes(body: AsyncIterable<Uint8Array>, cap: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    n += chunk.length;
    if (n > cap) throw new UpstreamError('invalid_response', `speech audio larger than ${cap} bytes`);
    parts.push(Buffer.from(chunk));
  }
  return Buffer.concat(parts);
}

export function textToSpeechTool(cfg: ToolsConfig, connectMs: number): BuiltinTool<TtsParams> {
  return {
    name: 'text_to_speech',
    description: 'Convert text to spoken audio. Returns the audio as base64 with its format and duration in seconds.',
    category: 'audio',
    parameters: {
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1, maxLength: 4096, description: 'The text to speak (at most 4096 characters).' },
        voice: { type: 'string', enum: VOICES, default: 'alloy', description: 'The voice.' },
        format: { type: 'string', enum: ['mp3', 'wav', 'opus'], default: 'mp3', description: 'Audio format.' },
        speed: { type: 'number', minimum: 0.25, maximum: 4, default: 1, description: 'Speaking speed (0.25 to 4).' },
      },
      required: ['text'],
      additionalProperties: false,
    },
    billed: true,
    version: '1.0.0',
    upstream: 'openai',
    unavailable: () => (cfg.ttsApiKey ? null : 'text to speech is not configured on this gateway (TTS_API_KEY or OPENAI_API_KEY)'),
    priceNano: (p) => usdToNano((cfg.priceTtsPer1kCharsUsd * characters(p.text)) / 1000),
    async run(p, ctx) {
      const t = cfg.timeoutMs;
      const res = await send(`${cfg.ttsBaseUrl}/audio/speech`, {
        method: 'POST', signal: ctx.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${cfg.ttsApiKey}` },
        body: JSON.stringify({ model: cfg.ttsModel, input: p.text, voice: p.voice, response_format: p.format, speed: p.speed }),
        timeouts: { connectMs: Math.min(connectMs, t), firstByteMs: t, totalMs: t },
      });
      const audio = await readBytes(res.body, MAX_AUDIO_BYTES);
      if (!audio.length) throw new UpstreamError('invalid_response', 'the speech service returned no audio');
      return {
        audio_base64: audio.toString('base64'), format: p.format, content_type: CONTENT_TYPES[p.format],
        duration_seconds: audioDuration(p.format, audio), size_bytes: audio.length,
        characters: characters(p.text), voice: p.voice, speed: p.speed,
      };
    },
  };
}
