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
  return pino(options, destination ?? bufferedStdout()) as unknown as Logger;
}

/** How long a log line may wait in the buffer (the buffer is written at 4 KiB or this, whichever comes first). */
export const LOG_FLUSH_MS = 100;

/**
 * stdout, written asynchronously in chunks of up to 4 KiB: under load, one write() per dozen
 * lines instead of one per line (a delivery logs three). A timer writes whatever is buffered
 * every LOG_FLUSH_MS, and pino writes the rest synchronously when the process exits.
 */
function bufferedStdout() {
  const stream = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  setInterval(() => {
    try {
      stream.flush();
    } catch {
      // stdout closed: nothing left to do
    }
  }, LOG_FLUSH_MS).unref();
  return stream;
}
