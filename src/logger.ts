import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs. Secrets are redacted by path so a key or prompt never reaches a log line. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]', '*.apiKey', '*.api_key', '*.messages', '*.prompt'],
      censor: '[redacted]',
    },
  });
}
