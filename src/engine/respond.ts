/**
 * Writing a stream to the client: SSE headers sent at once, each frame written as it is made (no buffering),
 * backpressure respected (a slow reader pauses the upstream instead of growing memory), and the upstream
 * aborted when the client leaves.
 */
import type { ServerResponse } from 'node:http';

export function startSse(res: ServerResponse, headers: Record<string, string>): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.flushHeaders();
  res.socket?.setNoDelay(true);
}

/** Writes a frame; resolves when the socket can take more. */
export function writeFrame(res: ServerResponse, frame: string): Promise<void> | void {
  if (!frame || res.writableEnded || res.destroyed) return;
  if (!res.write(frame)) {
    return new Promise((resolve) => {
      const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
      res.on('drain', done);
      res.on('close', done);
    });
  }
}

/** An AbortSignal that fires when the client disconnects before the response finished. */
export function clientGone(res: ServerResponse): AbortController {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller;
}
