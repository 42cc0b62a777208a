import { Writable } from 'node:stream';
import { onTestFailed } from 'vitest';
import { createNodeLogger } from '../../src/node/logger.js';

/** A real pino logger writing JSON lines into memory, so tests read exactly what would be logged (printed if the test fails). */
export function captureLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createNodeLogger({ level: 'debug', destination: destination as never });
  // Quiet while tests pass; what was logged is printed when the test that made this logger fails.
  try {
    onTestFailed(() => console.error(`captured log lines:\n${lines.join('\n')}`));
  } catch {
    // made outside a test (a file-level logger): nothing to attach to
  }
  return {
    logger,
    lines,
    text: () => lines.join('\n'),
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
