/**
 * Transcription: `POST /v1/audio/transcriptions` (multipart) and `/v1/audio/transcriptions/base64`. The audio is
 * checked by content (formats.ts), its duration read from the file (duration.ts), the per-minute price of that
 * duration held, the Whisper-compatible upstreams tried in order (failover as for chat), and the duration settled
 * after success; a failed transcription releases the hold and costs nothing.
 *
 * Billed duration, first that is known (reported as `gateway_usage.duration_source`):
 *   file          what the file itself says (music-metadata; the EBML walk for WebM)
 *   upstream      what the upstream reports (`duration` of verbose_json, or `usage.seconds`)
 *   size_estimate the size at 128 kbit/s (16,000 bytes a second), a typical browser Opus/WebM rate
 * The hold uses the file's duration, else the size estimate; a settle above the hold takes the difference.
 */
import type { components } from '../../generated/api.js';
import type { CallContext } from '../engine/chat.js';
import type { Offer } from '../catalog/types.js';
import { nanoToUsd } from '../store/credits.js';
import { MediaJobs } from './common.js';
import { checkAudio } from './formats.js';
import { audioDuration } from './duration.js';
import { transcriptionProviders } from './registry.js';
import { decodeAudioBase64 } from './upload.js';
import type { TranscriptionCall, TranscriptionFormat, TranscriptionResult } from './types.js';

export type TranscriptionResponse = components['schemas']['TranscriptionResponse'];
type MultipartBody = components['schemas']['TranscriptionRequest'];
type Base64Body = components['schemas']['TranscriptionBase64Request'];

const DEFAULT_MODEL = 'whisper-1';
export const SIZE_ESTIMATE_BYTES_PER_SECOND = 16_000;

const TRANSCRIPTION_JOB = {
  verb: 'transcribe audio',
  adapters: transcriptionProviders,
  // A per-minute price, or audio in and text out only (Whisper-like), marks a transcription model.
  fits: (o: Offer) => o.pricing.audioPerMinute !== null || (o.modalities.input.length === 1 && o.modalities.input[0] === 'audio'),
};

interface Options {
  model?: string;
  language?: string;
  prompt?: string;
  temperature?: number;
  response_format?: TranscriptionFormat;
  granularities?: string[];
}

export class TranscriptionService {
  constructor(private readonly jobs: MediaJobs) {}

  /** The multipart form: `upload` is the file busboy read (src/media/upload.ts). */
  multipart(upload: { data: Buffer; filename: string }, body: MultipartBody, ctx: CallContext) {
    return this.transcribe(upload.data, upload.filename, 'file', { ...body, granularities: body['timestamp_granularities[]'] }, ctx);
  }

  base64(body: Base64Body, ctx: CallContext) {
    const data = decodeAudioBase64(body.audio_data, this.jobs.d.config.uploadLimit);
    return this.transcribe(data, body.filename ?? 'recording.webm', 'audio_data', body, ctx);
  }

  private async transcribe(data: Buffer, filename: string, param: string, opts: Options, ctx: CallContext): Promise<{ body: TranscriptionResponse; offer: Offer }> {
    const { config, engine, store, logger } = this.jobs.d;
    const file = checkAudio(data, filename, param);
    const model = opts.model ?? DEFAULT_MODEL;
    const offers = this.jobs.offersFor(model, ctx.pinGateway, TRANSCRIPTION_JOB);
    const fileSeconds = await audioDuration(file, logger);
    const estimate = Math.round((data.length / SIZE_ESTIMATE_BYTES_PER_SECOND) * 1000) / 1000;
    const priceNano = (o: Offer, seconds: number) => Math.round(((o.pricing.audioPerMinute ?? 0) * seconds / 60) * config.priceMarkup * 1e9);
    const holdSeconds = fileSeconds ?? estimate;
    const holdId = await this.jobs.hold(ctx, Math.max(...offers.map((o) => priceNano(o, holdSeconds))), `transcribing ${holdSeconds} s of audio with ${model}`);
    const call: TranscriptionCall = {
      file, language: opts.language, prompt: opts.prompt, temperature: opts.temperature,
      responseFormat: opts.response_format ?? 'json', granularities: opts.granularities,
    };
    const started = Date.now();
    let got: { value: TranscriptionResult; offer: Offer; startedAt: number };
    try {
      got = await engine.tryCandidates(offers, ctx, (offer, target) => transcriptionProviders[offer.gateway].transcribe(call, target, ctx.signal),
        (offer) => this.jobs.target(transcriptionProviders[offer.gateway], offer));
    } catch (err) {
      return this.jobs.fail(ctx, holdId, model, err, started);
    }
    const { value, offer, startedAt } = got;
    const latencyMs = Date.now() - started;
    await engine.observe(offer, true, 'success', Date.now() - startedAt, null);
    const [seconds, source] = fileSeconds !== null ? [fileSeconds, 'file' as const]
      : value.reportedSeconds !== undefined ? [value.reportedSeconds, 'upstream' as const] : [estimate, 'size_estimate' as const];
    const charged = await store.credits.settle(holdId, priceNano(offer, seconds));
    this.jobs.record(ctx, offer, model, 'success', 200, charged, latencyMs, null);
    const { reportedSeconds: _, ...transcript } = value;
    return {
      offer,
      body: {
        ...dropUndefined(transcript),
        gateway_usage: {
          gateway: offer.gateway, provider: offer.developer, model: offer.upstreamModel, duration_seconds: seconds, duration_source: source,
          cost_usd: nanoToUsd(charged), latency_ms: latencyMs,
        },
      } as TranscriptionResponse,
    };
  }
}

function dropUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
