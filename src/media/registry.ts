/**
 * Which gateways can make images and which can transcribe audio: one line per gateway id (as in the catalog's
 * gateways), the value its adapter. A gateway missing here cannot do that job, whatever models it lists.
 */
import { openaiImages, openaiTranscription } from './openai.js';
import { vertexImages } from './vertex.js';
import type { ImageAdapter, TranscriptionAdapter } from './types.js';

export const imageProviders: Record<string, ImageAdapter> = {
  openai: openaiImages(),
  together: openaiImages(),
  deepinfra: openaiImages(),
  xai: openaiImages(),
  nebius: openaiImages(),
  local: openaiImages(),
  google: vertexImages,
};

export const transcriptionProviders: Record<string, TranscriptionAdapter> = {
  openai: openaiTranscription(),
  groq: openaiTranscription(),
  deepinfra: openaiTranscription(),
  together: openaiTranscription(),
  local: openaiTranscription(),
};
