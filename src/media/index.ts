/** The media service handlers call: image generation and audio transcription over the chat engine's routing. */
import { MediaJobs, type MediaDeps } from './common.js';
import { ImageService } from './images.js';
import { TranscriptionService } from './transcription.js';

export class MediaService {
  readonly images: ImageService;
  readonly transcription: TranscriptionService;

  constructor(deps: MediaDeps) {
    const jobs = new MediaJobs(deps);
    this.images = new ImageService(jobs);
    this.transcription = new TranscriptionService(jobs);
  }
}

export { transcriptionBodies, uploadOf } from './upload.js';
