/**
 * Request bodies of the two transcription operations, read before openapi-backend validates them.
 *
 * Multipart (`POST /v1/audio/transcriptions`) is parsed with busboy as a stream. The text fields become the body
 * that the spec validates (and coerces: `temperature` as a number, `timestamp_granularities[]` as an array); the
 * file stays out of it except as a placeholder string, and is handed to the handler through `uploadOf(req)`.
 * At most UPLOAD_LIMIT bytes of file are kept: a declared Content-Length that cannot fit is refused before any
 * byte is read, and a stream that passes the limit is refused the moment it does — the parser is detached and
 * the connection closed after the 413, so the rest of the upload is never read.
 *
 * URL-encoded (`/v1/audio/transcriptions/base64`) gets a parser of its own whose limit fits base64 of
 * UPLOAD_LIMIT bytes (the global form parser's BODY_LIMIT is for JSON-sized bodies).
 *
 * Authentication comes first, so an anonymous upload is answered 401 without being read.
 */
import busboy from 'busboy';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ApiError, ValidationFailure } from '../errors.js';

export const TRANSCRIBE_PATH = '/v1/audio/transcriptions';
export const TRANSCRIBE_BASE64_PATH = '/v1/audio/transcriptions/base64';

/** Room for the text fields and part headers around the file. */
const FORM_OVERHEAD = 256 * 1024;

export interface Upload {
  field: string;
  filename: string;
  mimeType: string;
  data: Buffer;
}

const uploads = new WeakMap<object, Upload>();

/** The file of a multipart transcription request (undefined when none was sent). */
export const uploadOf = (req: object): Upload | undefined => uploads.get(req);

export const tooLarge = (limit: number, what = 'The uploaded audio') =>
  new ApiError(413, 'invalid_request_error', `${what} is larger than the limit of ${limit} bytes (${(limit / 1048576).toFixed(1)} MB).`, 'payload_too_large', 'file');

export interface UploadOptions {
  limit: number;
  /** Resolves the caller's key (cached for the security handler); false when there is no valid one. */
  authenticate: (req: Request, res: Response) => boolean | Promise<boolean>;
  /** Sends an error with the spec's body. */
  fail: (req: Request, res: Response, err: unknown) => void;
}

const mediaType = (req: Request) => String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
const hasBody = (req: Request) => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

export function transcriptionBodies(opts: UploadOptions): RequestHandler {
  // base64 of `limit` bytes is 4/3 of it; form encoding adds %2B / %2F / %3D escapes on top.
  const form = express.urlencoded({ extended: false, limit: Math.ceil((opts.limit * 4) / 3 * 1.25) + FORM_OVERHEAD });
  return (req: Request, res: Response, next: NextFunction) => {
    const path = req.method === 'POST' ? req.path : '';
    if (path !== TRANSCRIBE_PATH && path !== TRANSCRIBE_BASE64_PATH) return next();
    void (async () => {
      if (!(await opts.authenticate(req, res))) return next(); // the security handler answers 401
      const want = path === TRANSCRIBE_PATH ? 'multipart/form-data' : 'application/x-www-form-urlencoded';
      if (!hasBody(req)) return next(); // validation answers "body: Field required"
      if (mediaType(req) !== want) {
        return opts.fail(req, res, new ApiError(415, 'invalid_request_error', `The request body must be ${want}, not ${mediaType(req) || 'untyped'}.`, 'unsupported_media_type'));
      }
      if (path === TRANSCRIBE_BASE64_PATH) {
        return form(req, res, (err?: any) => {
          if (err?.type === 'entity.too.large') return opts.fail(req, res, tooLarge(opts.limit, 'The base64 audio'));
          next(err);
        });
      }
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > opts.limit + FORM_OVERHEAD) return refuse(req, res, opts, tooLarge(opts.limit));
      try {
        const { fields, file } = await readMultipart(req, opts.limit, declared);
        if (file) uploads.set(req, file);
        // The spec validates the fields; the file is a placeholder there (`format: binary` is any string).
        req.body = file ? { ...fields, [file.field]: `<${file.data.length} bytes>` } : fields;
        next();
      } catch (err) {
        // Any answer given before the upload was read to its end closes the connection: the unread rest would
        // otherwise be parsed as the next request on a kept-alive socket (found by the fuzzer: too many parts).
        if (!req.complete || (err instanceof ApiError && err.status === 413)) return refuse(req, res, opts, err);
        opts.fail(req, res, err);
      }
    })().catch(next);
  };
}

/** Answers and closes the connection, so the rest of an oversized or broken upload is not read. */
function refuse(req: Request, res: Response, opts: UploadOptions, err: unknown) {
  res.setHeader('Connection', 'close');
  opts.fail(req, res, err);
}

/** Collects a file's chunks; with a declared body length the bytes go into one buffer (no second copy). */
class Sink {
  private chunks: Buffer[] = [];
  private buf: Buffer | undefined;
  size = 0;
  constructor(expected: number) {
    if (Number.isFinite(expected) && expected > 0) this.buf = Buffer.allocUnsafe(expected);
  }
  push(d: Buffer) {
    if (this.buf && this.size + d.length <= this.buf.length) d.copy(this.buf, this.size);
    else {
      if (this.buf) { this.chunks.push(this.buf.subarray(0, this.size)); this.buf = undefined; }
      this.chunks.push(d);
    }
    this.size += d.length;
  }
  bytes(): Buffer {
    return this.buf ? this.buf.subarray(0, this.size) : Buffer.concat(this.chunks, this.size);
  }
}

const formError = (msg: string) => new ApiError(400, 'invalid_request_error', `Malformed multipart body: ${msg}`, 'invalid_multipart');

function readMultipart(req: Request, limit: number, declared: number): Promise<{ fields: Record<string, string | string[]>; file?: Upload }> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      // fileSize is limit + 1: busboy reports "limit" on reaching the size, and exactly `limit` bytes are fine.
      bb = busboy({ headers: req.headers, limits: { fileSize: limit + 1, files: 1, fields: 50, fieldSize: 64 * 1024, parts: 60 } });
    } catch (err) {
      return reject(formError((err as Error).message));
    }
    const fields: Record<string, string | string[]> = {};
    let file: Upload | undefined;
    let done = false;
    const finish = (err?: unknown) => {
      if (done) return;
      done = true;
      if (err) {
        req.unpipe(bb);
        bb.removeAllListeners();
        bb.on('error', () => {});
        return reject(err);
      }
      resolve({ fields, file });
    };
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated) return finish(new ApiError(413, 'invalid_request_error', `Form field '${name}' is longer than 65536 bytes.`, 'payload_too_large', name));
      const prev = fields[name];
      fields[name] = prev === undefined ? value : ([] as string[]).concat(prev, value);
    });
    bb.on('file', (field, stream, info) => {
      const sink = new Sink(Math.min(declared, limit));
      stream.on('data', (d: Buffer) => sink.push(d));
      stream.on('limit', () => finish(tooLarge(limit)));
      stream.on('error', (err: Error) => finish(formError(err.message))); // a body cut short mid-file
      stream.on('end', () => {
        if (!done) file = { field, filename: info.filename ?? '', mimeType: info.mimeType, data: sink.bytes() };
      });
    });
    bb.on('filesLimit', () => finish(formError('send one file')));
    bb.on('fieldsLimit', () => finish(formError('too many fields')));
    bb.on('partsLimit', () => finish(formError('too many parts')));
    bb.on('error', (err: Error) => finish(formError(err.message)));
    bb.on('close', () => finish());
    // The client went away mid-upload: nobody is left to answer, but the parse must end (and not as a 500).
    req.on('error', () => finish(new ApiError(400, 'invalid_request_error', 'The upload was interrupted.', 'upload_interrupted')));
    req.pipe(bb);
  });
}

/**
 * The base64 form's audio: raw base64 (standard alphabet, padding optional, line breaks ignored). A `data:`
 * URL or any other character is a 422 naming the field; more than `limit` decoded bytes is a 413.
 */
export function decodeAudioBase64(raw: string, limit: number): Buffer {
  const bad = (msg: string, type: string) => new ValidationFailure([{ loc: ['body', 'audio_data'], msg, type }]);
  const text = raw.replace(/[\r\n]/g, '');
  if (/^\s*data:/i.test(text)) {
    throw bad('audio_data must be raw base64 without a data: URL prefix; send only what follows "base64,".', 'data_url_prefix');
  }
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 === 1) {
    const at = text.search(/[^A-Za-z0-9+/=]/);
    const why = at >= 0 ? `character ${JSON.stringify(text[at])} at position ${at} is not in the base64 alphabet` : 'its length or padding is wrong';
    throw bad(`audio_data is not valid base64: ${why}.`, 'base64_invalid');
  }
  if (Math.floor((text.length * 3) / 4) - 2 > limit) throw tooLarge(limit, 'The decoded audio');
  const data = Buffer.from(text, 'base64');
  if (data.length > limit) throw tooLarge(limit, 'The decoded audio');
  return data;
}
