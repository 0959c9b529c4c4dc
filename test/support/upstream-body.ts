/**
 * An UpstreamBody (src/providers/http.ts) fed from a Node Readable, as undici's dispatch handler feeds it from the
 * wire: its chunks, its end, its error, or a close before its end (a connection reset). `flow` is what the body
 * asks of the call: pause, resume, and `aborted`, the reason it aborted the call with (if it did).
 */
import { Readable } from 'node:stream';
import { UpstreamBody } from '../../src/providers/http.js';

export interface TestFlow {
  aborted: Error | undefined;
  pause(): void;
  resume(): void;
  abort(reason: Error): void;
}

export function bodyFrom(source: Readable): { body: UpstreamBody; flow: TestFlow } {
  const flow: TestFlow = {
    aborted: undefined,
    pause() { source.pause(); },
    resume() { source.resume(); },
    abort(reason) {
      flow.aborted ??= reason;
      source.destroy();
      body.fail(reason); // undici reports its own abort to the handler, which fails the body
    },
  };
  const body = new UpstreamBody(flow);
  source.on('data', (c: Buffer | string) => body.push(Buffer.from(c)));
  source.on('end', () => body.end());
  source.on('error', (err) => body.fail(err));
  source.on('close', () => {
    if (!source.readableEnded) body.fail(Object.assign(new Error('upstream body closed before its end'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
  });
  return { body, flow };
}

/** A body whose chunks are `chunks` (one network read each), then its end. */
export function bodyOf(...chunks: string[]): UpstreamBody {
  return bodyFrom(Readable.from(chunks.map((c) => Buffer.from(c)))).body;
}
