import type { Logger } from '../core/observability/logger.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** One log line as a handler wrote it, with the bindings of its logger (event_id, handler, …). */
export interface LogLine {
  level: LogLevel;
  msg: string | undefined;
  [field: string]: unknown;
}

/** A logger that keeps every line in memory (no I/O, so it works on Node and in workerd). */
export function captureLogs(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const make = (bindings: Record<string, unknown>): Logger => {
    const write = (level: LogLevel) => (obj: object, msg?: string) => void lines.push({ ...bindings, ...obj, level, msg });
    return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error'), child: (more) => make({ ...bindings, ...more }) };
  };
  return { logger: make({}), lines };
}
