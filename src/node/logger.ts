import { writeSync } from 'node:fs';
import pino, { type DestinationStream, type LevelWithSilent } from 'pino';
import type { Logger } from '../core/observability/logger.js';
import { redactFields } from '../core/observability/redact.js';
import { countWork } from '../core/observability/work-count.js';

export interface NodeLoggerOptions {
  level?: LevelWithSilent;
  /** Human-readable output (pino-pretty, a dev dependency) instead of JSON lines. */
  pretty?: boolean;
  /** Where JSON lines go (tests capture them); stdout by default. */
  destination?: DestinationStream;
}

/**
 * pino, JSON lines on stdout. Redaction is a second line of defence (no secret is passed to a
 * logger in the first place); it is the core's `redactFields`, the Worker's rule too, because
 * pino's wildcard `redact` re-parses every path for every field of every line.
 */
export function createNodeLogger({ level = 'info', pretty = false, destination }: NodeLoggerOptions = {}): Logger {
  const options = {
    level,
    base: { service: 'podhook' },
    // An error as pino prints one; a handler's line carries its errors as plain data already (`{ type, message, stack }`).
    serializers: { err: (e: unknown) => (e instanceof Error ? pino.stdSerializers.err(e) : e) },
    formatters: { log: (fields: Record<string, unknown>) => (countWork('log_line'), redactFields(fields)), bindings: redactFields },
  };
  const logger =
    pretty && !destination
      ? pino({ ...options, transport: { target: 'pino-pretty', options: { destination: 2 } } })
      : pino(options, destination ?? bufferedStdout());
  return redactChildBindings(logger) as unknown as Logger;
}

/**
 * pino applies `formatters.bindings` to the root's bindings only; a child's bindings go through
 * the same rule here. Children inherit this `child` from the root, so it holds at any depth.
 */
function redactChildBindings(logger: pino.Logger): pino.Logger {
  const pinoChild = logger.child;
  logger.child = function child(this: pino.Logger, bindings, options) {
    countWork('logger_child');
    return pinoChild.call(this, redactFields(bindings), options);
  } as typeof pinoChild;
  return logger;
}

/** How long a log line may wait in the buffer (it is written at CHUNK_CHARS or this, whichever comes first). */
export const LOG_FLUSH_MS = 100;
const CHUNK_CHARS = 4096;

/**
 * stdout, written asynchronously in chunks of CHUNK_CHARS or every LOG_FLUSH_MS, the rest
 * synchronously at exit. Lines wait in an array joined once per chunk because sonic-boom's own
 * `minLength` buffer re-measures, and so flattens, its whole pending string on every line;
 * sonic-boom still does the writing (partial writes, EAGAIN, a closed pipe).
 */
function bufferedStdout(): DestinationStream {
  const stream = pino.destination({ dest: 1, sync: false });
  const lines: string[] = [];
  let chars = 0;
  const flush = () => {
    if (lines.length === 0) return;
    const chunk = lines.join('');
    lines.length = 0;
    chars = 0;
    stream.write(chunk);
  };
  setInterval(() => {
    try {
      flush();
    } catch {
      // stdout closed: nothing left to do
    }
  }, LOG_FLUSH_MS).unref();
  // Before pino's own exit hook. At exit, nothing asynchronous completes: what sonic-boom holds
  // and the lines still waiting here are written synchronously (an async write would be lost).
  process.prependListener('exit', () => {
    try {
      stream.flushSync();
    } catch {
      // nothing pending there, or stdout closed
    }
    try {
      if (lines.length > 0) writeSync(1, lines.join(''));
    } catch {
      // stdout closed: nothing left to do
    }
    lines.length = 0;
  });
  return {
    write(line: string) {
      lines.push(line);
      chars += line.length;
      if (chars >= CHUNK_CHARS) flush();
    },
  };
}
