import { Writable } from 'node:stream';
import { createNodeLogger } from '../../src/node/logger.js';

/** A real pino logger writing JSON lines into memory, so tests read exactly what would be logged. */
export function captureLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createNodeLogger({ level: 'debug', destination: destination as never });
  return {
    logger,
    lines,
    text: () => lines.join('\n'),
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
