/** Process entry: config -> store -> services -> listen; graceful shutdown on SIGTERM/SIGINT. */
import type { Server } from 'node:http';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { openStore } from './store/index.js';
import { KeyService } from './auth.js';
import { buildServices, stopServices } from './services.js';
import { createApp } from './app.js';
import { protectServer } from './security.js';
import { MemoryTrimmer } from './memory.js';

async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const store = await openStore(config.database);
  const keys = new KeyService(store.keys, config.keyHashSecret, config.adminApiKey);
  const services = await buildServices(config, store, logger);
  const app = await createApp({ config, store, keys, logger, services });
  const onListenError = (err: NodeJS.ErrnoException) => {
    const why = err.code === 'EADDRINUSE' ? 'the port is in use' : err.code === 'EACCES' ? 'not allowed' : err.message;
    process.stderr.write(`Failed to start: cannot listen on ${config.host}:${config.port} (HOST, PORT): ${why} (${err.code ?? 'error'})\n`);
    process.exit(1);
  };
  const server: Server = app.listen(config.port, config.host, () => {
    server.off('error', onListenError);
    const addr = server.address();
    const port = typeof addr === 'object' && addr ? addr.port : config.port;
    logger.info({ port, host: config.host, database: config.database.dialect }, `gateway listening on http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${port}`);
  });
  // A port in use (or not allowed) stops start-up with a message naming it, not with an unhandled 'error' event's stack
  // (the listener goes once the server listens; emitted on a later tick, it is in place in time).
  server.once('error', onListenError);
  server.keepAliveTimeout = 65_000;
  protectServer(server);
  // After large bodies, glibc keeps freed pages resident: given back when nothing is in flight; V8's heap once nothing
  // has been served for MEMORY_REDUCE_AFTER_MS, V8's own memory reducer being off under `npm start` (src/memory.ts).
  const trimmer = new MemoryTrimmer(services.inflight, logger, { intervalMs: config.memoryTrimIntervalMs, reduceAfterMs: config.memoryReduceAfterMs, reduceMaxMs: config.memoryReduceMaxMs });
  if (trimmer.start()) services.metrics.watchMemoryTrim(trimmer);
  if (process.execArgv.includes('--no-memory-reducer') && !trimmer.reduces) {
    logger.warn({ memoryReduceAfterMs: config.memoryReduceAfterMs, memoryTrimIntervalMs: config.memoryTrimIntervalMs },
      'V8\'s memory reducer is off (--no-memory-reducer) and the gateway does not reduce the heap itself (the native/malloc-trim addon is not built, or MEMORY_REDUCE_AFTER_MS or MEMORY_TRIM_INTERVAL_MS is 0): the heap is not given back after load');
  }

  // A promise nobody awaited must not take the process (and every open stream) down; it is a bug to log.
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled promise rejection'));

  let stopping = false;
  /**
   * Graceful stop: refuse new requests (503, Connection: close), let in-flight requests and streams finish for
   * up to SHUTDOWN_GRACE_MS, then cut what is left (those requests see the client gone: their holds are
   * released and their usage recorded as cancelled), flush buffered usage and close the database.
   */
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const { inflight } = services;
    logger.info({ signal, inFlight: inflight.count }, 'shutting down: no new connections, finishing in-flight requests');
    inflight.draining = true;
    server.close();
    server.closeIdleConnections();
    if (!(await inflight.idle(config.shutdownGraceMs))) {
      logger.warn({ inFlight: inflight.count, graceMs: config.shutdownGraceMs }, 'grace period over: closing the remaining connections');
      server.closeAllConnections();
      await inflight.idle(5_000);
    }
    trimmer.stop();
    await stopServices(services);
    await store.close();
    logger.info('stopped');
    logger.flush();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(`Failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
