/**
 * Audio formats the transcription endpoints accept, recognised by their first bytes (a file's name can say
 * anything). Whisper-compatible upstreams pick their decoder by the file name's extension, so a file is
 * forwarded under a name whose extension matches what its bytes are.
 */
import { ApiError } from '../errors.js';

/** The formats of the interface, in its order. */
export const AUDIO_FORMATS = ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'ogg', 'wav', 'webm'] as const;
export type AudioExt = (typeof AUDIO_FORMATS)[number];

/** What the bytes are: one container, which may go by several extensions (the first is the canonical one). */
export type Container = 'flac' | 'mp4' | 'mp3' | 'ogg' | 'wav' | 'webm';

const EXTENSIONS: Record<Container, AudioExt[]> = {
  flac: ['flac'], mp4: ['m4a', 'mp4'], mp3: ['mp3', 'mpeg', 'mpga'], ogg: ['ogg'], wav: ['wav'], webm: ['webm'],
};

const MIME: Record<Container, string> = {
  flac: 'audio/flac', mp4: 'audio/mp4', mp3: 'audio/mpeg', ogg: 'audio/ogg', wav: 'audio/wav', webm: 'audio/webm',
};

const ascii = (b: Buffer, at: number, text: string) => b.length >= at + text.length && b.toString('latin1', at, at + text.length) === text;

/** An MPEG audio frame header at `i`: 11 sync bits, a defined version and layer, a usable bitrate and rate. */
function mpegFrameAt(b: Buffer, i: number): boolean {
  if (b.length < i + 4 || b[i] !== 0xff || (b[i + 1] & 0xe0) !== 0xe0) return false;
  const version = (b[i + 1] >> 3) & 3;
  const layer = (b[i + 1] >> 1) & 3;
  const bitrate = (b[i + 2] >> 4) & 15;
  const rate = (b[i + 2] >> 2) & 3;
  // layer 0 is reserved (and is what AAC's ADTS header has there); bitrate 15 and rate 3 are invalid
  return version !== 1 && layer !== 0 && bitrate !== 15 && rate !== 3;
}

export function sniffContainer(b: Buffer): Container | null {
  if (ascii(b, 0, 'fLaC')) return 'flac';
  if (ascii(b, 4, 'ftyp')) return 'mp4';
  if (ascii(b, 0, 'OggS')) return 'ogg';
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WAVE')) return 'wav';
  if (b.length >= 4 && b.readUInt32BE(0) === 0x1a45dfa3) return 'webm'; // EBML (WebM / Matroska)
  if (ascii(b, 0, 'ID3')) {
    // An ID3v2 tag leads MP3s (and, rarely, FLAC): look behind it.
    const size = b.length >= 10 ? ((b[6] & 0x7f) << 21) | ((b[7] & 0x7f) << 14) | ((b[8] & 0x7f) << 7) | (b[9] & 0x7f) : 0;
    const after = 10 + size + (b[5] & 0x10 ? 10 : 0);
    if (ascii(b, after, 'fLaC')) return 'flac';
    // Encoders may pad after the tag; the first frame must follow within a few KB.
    for (let i = after; i < Math.min(b.length, after + 4096); i++) if (mpegFrameAt(b, i)) return 'mp3';
    return null;
  }
  // A bare MPEG audio stream starts on a frame header.
  if (mpegFrameAt(b, 0)) return 'mp3';
  return null;
}

export interface AudioFile {
  /** The name forwarded upstream: the client's, with an extension that matches the bytes. */
  filename: string;
  ext: AudioExt;
  container: Container;
  mimeType: string;
  data: Buffer;
}

const FORMATS_TEXT = AUDIO_FORMATS.join(', ');

/**
 * Checks an upload: not empty, and a supported format by content. 400 otherwise, naming the supported formats.
 * `param` names the field the file came in (`file`, `audio_data`).
 */
export function checkAudio(data: Buffer, clientName: string, param: string): AudioFile {
  if (!data.length) throw new ApiError(400, 'invalid_request_error', `The uploaded audio (${param}) is empty.`, 'empty_file', param);
  const container = sniffContainer(data);
  if (!container) {
    throw new ApiError(400, 'invalid_request_error',
      `The uploaded audio (${param}) is not in a supported format (judged by its content, not its name). Supported formats: ${FORMATS_TEXT}.`,
      'unsupported_audio_format', param);
  }
  const base = (clientName.split(/[\\/]/).pop() || 'audio').replace(/[^\w.\- ]/g, '_').slice(0, 120);
  const dot = base.lastIndexOf('.');
  const given = dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
  const stem = dot > 0 ? base.slice(0, dot) : base;
  const family = EXTENSIONS[container];
  const ext = (family as string[]).includes(given) ? (given as AudioExt) : family[0];
  return { filename: `${stem}.${ext}`, ext, container, mimeType: MIME[container], data };
}
