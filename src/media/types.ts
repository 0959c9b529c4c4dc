/** Internal types of the media service: what an image or transcription adapter is asked and answers. */
import type { Config } from '../config.js';
import type { Target } from '../providers/types.js';
import type { ImageProfile } from './image-profiles.js';
import type { AudioFile } from './formats.js';

export interface ImageCall {
  prompt: string;
  n: number;
  width: number;
  height: number;
  /** The quality asked for (already checked against the profile), or undefined for the model's default. */
  quality?: string;
  responseFormat: 'url' | 'b64_json';
  style?: string;
  user?: string;
  profile: ImageProfile;
  /** The cloud-endpoint provider's coordinates (request fields, else configured defaults). */
  vertex?: { project?: string; location: string; endpointId?: string };
}

export interface GeneratedImage {
  url?: string;
  b64?: string;
  /** MIME type of `b64` when the upstream said (data URLs need one). */
  mimeType?: string;
  revisedPrompt?: string;
}

export interface ImageResult {
  images: GeneratedImage[];
  /** The quality the upstream reports it used (`auto` requests), when it says. */
  quality?: string;
}

/** Where a gateway's media endpoint is and its key; undefined when not configured. */
export type Endpoint = { baseUrl: string; apiKey: string } | undefined;

export interface ImageAdapter {
  /** An endpoint of its own (the Vertex provider); absent: the gateway's configured upstream. */
  endpoint?(config: Config): Endpoint;
  /** What this provider needs beyond the profile (the Vertex provider: a project); null when the call is fine. */
  check?(call: ImageCall): { param: string; msg: string } | null;
  generate(call: ImageCall, target: Target, signal: AbortSignal): Promise<ImageResult>;
}

export type TranscriptionFormat = 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt';

export interface TranscriptionCall {
  file: AudioFile;
  language?: string;
  prompt?: string;
  temperature?: number;
  responseFormat: TranscriptionFormat;
  granularities?: string[];
}

export interface TranscriptionResult {
  text: string;
  language?: string;
  duration?: number;
  segments?: unknown[];
  words?: unknown[];
  /** Seconds of audio the upstream says it processed (`duration` or `usage.seconds`), when it says. */
  reportedSeconds?: number;
}

export interface TranscriptionAdapter {
  /** An endpoint of its own; absent: the gateway's configured upstream. */
  endpoint?(config: Config): Endpoint;
  transcribe(call: TranscriptionCall, target: Target, signal: AbortSignal): Promise<TranscriptionResult>;
}
