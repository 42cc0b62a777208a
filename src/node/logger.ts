import pino, { type DestinationStream, type LevelWithSilent } from 'pino';
import type { Logger } from '../core/logger.js';

export interface NodeLoggerOptions {
  level?: LevelWithSilent;
  /** Human-readable output (pino-pretty, a dev dependency) instead of JSON lines. */
  pretty?: boolean;
  /** Where JSON lines go (tests capture them); stdout by default. */
  destination?: DestinationStream;
}

/**
 * pino, JSON lines on stdout. Redaction is a second line of defence: the code never passes a
 * secret, a signature or an unauthenticated body to the logger in the first place.
 */
export function createNodeLogger({ level = 'info', pretty = false, destination }: NodeLoggerOptions = {}): Logger {
  const options = {
    level,
    base: { service: 'podhook' },
    redact: {
      paths: ['secret', '*.secret', 'secrets', 'signature', '*.signature', 'headers["x-svc-signature"]', 'apiKey', '*.apiKey'],
      censor: '[redacted]',
    },
  };
  if (pretty && !destination) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { destination: 2 } } }) as unknown as Logger;
  }
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false })) as unknown as Logger;
}
