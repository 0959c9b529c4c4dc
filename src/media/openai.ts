/**
 * OpenAI-compatible media endpoints: `POST {base}/images/generations` (JSON) and `POST {base}/audio/transcriptions`
 * (multipart, Whisper wire format). Used by every gateway that speaks them (OpenAI, Groq, Together, DeepInfra, a
 * local server, …); the base URL and key are the gateway's configured upstream.
 */
import { randomHex } from '../ids.js';
import { Readable } from 'node:stream';
import { UpstreamError } from '../engine/types.js';
import { readCapped, send, transportError } from '../providers/http.js';
import { readJsonBody } from '../providers/shared.js';
import type { Target } from '../providers/types.js';
import type { ImageAdapter, ImageCall, ImageResult, TranscriptionAdapter, TranscriptionCall, TranscriptionResult } from './types.js';

const jsonHeaders = (t: Target) => ({ authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', accept: 'application/json' });

export function openaiImages(): ImageAdapter {
  return {
    async generate(call: ImageCall, target: Target, signal: AbortSignal): Promise<ImageResult> {
      const body: Record<string, unknown> = { model: target.upstreamModel, prompt: call.prompt, n: call.n, size: `${call.width}x${call.height}` };
      if (call.quality && call.profile.forwardQuality) body.quality = call.quality;
      if (call.profile.forwardResponseFormat) body.response_format = call.responseFormat;
      if (call.style) body.style = call.style;
      if (call.user) body.user = call.user;
      const res = await send(`${target.baseUrl}/images/generations`, { headers: jsonHeaders(target), body: JSON.stringify(body), signal, timeouts: target.timeouts });
      const json = await readJsonBody<any>(res, signal);
      if (!Array.isArray(json?.data)) throw new UpstreamError('invalid_response', 'image upstream answered without a data array');
      const images = json.data.map((d: any) => ({
        url: typeof d?.url === 'string' ? d.url : undefined,
        b64: typeof d?.b64_json === 'string' ? d.b64_json : undefined,
        mimeType: typeof json.output_format === 'string' ? `image/${json.output_format}` : undefined,
        revisedPrompt: typeof d?.revised_prompt === 'string' ? d.revised_prompt : undefined,
      })).filter((d: { url?: string; b64?: string }) => d.url || d.b64);
      return { images, quality: typeof json.quality === 'string' ? json.quality : undefined };
    },
  };
}

const CRLF = '\r\n';
const quoted = (s: string) => s.replace(/["\r\n\\]/g, '_');

/** The multipart body as parts, so the file is streamed from the upload's buffer rather than copied. */
function multipart(call: TranscriptionCall, model: string): { boundary: string; parts: Buffer[] } {
  const boundary = `----gateway-${randomHex(24)}`;
  const fields: Array<[string, string]> = [['model', model], ['response_format', call.responseFormat]];
  if (call.language !== undefined) fields.push(['language', call.language]);
  if (call.prompt !== undefined) fields.push(['prompt', call.prompt]);
  if (call.temperature !== undefined) fields.push(['temperature', String(call.temperature)]);
  for (const g of call.granularities ?? []) fields.push(['timestamp_granularities[]', g]);
  let head = '';
  for (const [name, value] of fields) head += `--${boundary}${CRLF}Content-Disposition: form-data; name="${name}"${CRLF}${CRLF}${value}${CRLF}`;
  head += `--${boundary}${CRLF}Content-Disposition: form-data; name="file"; filename="${quoted(call.file.filename)}"${CRLF}Content-Type: ${call.file.mimeType}${CRLF}${CRLF}`;
  return { boundary, parts: [Buffer.from(head, 'utf8'), call.file.data, Buffer.from(`${CRLF}--${boundary}--${CRLF}`, 'utf8')] };
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

export function openaiTranscription(): TranscriptionAdapter {
  return {
    async transcribe(call: TranscriptionCall, target: Target, signal: AbortSignal): Promise<TranscriptionResult> {
      const { boundary, parts } = multipart(call, target.upstreamModel);
      const length = parts.reduce((n, p) => n + p.length, 0);
      const res = await send(`${target.baseUrl}/audio/transcriptions`, {
        headers: { authorization: `Bearer ${target.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(length), accept: 'application/json, text/plain' },
        body: Readable.from(parts, { objectMode: false }),
        signal,
        timeouts: target.timeouts,
      });
      const type = String(res.headers['content-type'] ?? '');
      if (!type.includes('json')) {
        // text, srt and vtt answers are the transcript itself
        try {
          return { text: await readCapped(res.body, 16 * 1024 * 1024) };
        } catch (err) {
          throw transportError(err, signal);
        }
      }
      const j = await readJsonBody<any>(res, signal);
      if (typeof j?.text !== 'string') throw new UpstreamError('invalid_response', 'transcription upstream answered without text');
      const usageSeconds = j.usage?.type === 'duration' ? num(j.usage.seconds) : undefined;
      return {
        text: j.text,
        language: typeof j.language === 'string' ? j.language : undefined,
        duration: num(j.duration),
        segments: Array.isArray(j.segments) ? j.segments : undefined,
        words: Array.isArray(j.words) ? j.words : undefined,
        reportedSeconds: num(j.duration) ?? usageSeconds,
      };
    },
  };
}
