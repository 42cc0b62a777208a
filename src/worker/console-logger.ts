import type { Logger } from '../core/observability/logger.js';
import { REDACTED, REDACTED_KEYS } from '../core/observability/redact.js';

/** pino's level names and numbers, so Worker and Node log lines read the same. */
const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity } as const;
export type ConsoleLogLevel = keyof typeof LEVELS;

/** The console methods used: the Workers runtime files each line under its method's level. */
export type ConsoleSink = Pick<Console, 'debug' | 'log' | 'warn' | 'error'>;

export interface ConsoleLoggerOptions {
  level?: ConsoleLogLevel;
  /** Fields on every line (a child logger adds its own). */
  bindings?: Record<string, unknown>;
  sink?: ConsoleSink;
  now?: () => number;
}

function replacer(key: string, value: unknown): unknown {
  if (REDACTED_KEYS.has(key)) return REDACTED; // the core's rule, as on Node
  if (value instanceof Error) return { type: value.name, message: value.message };
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/**
 * A `Logger` that writes one JSON object per line to the console, shaped like pino's lines
 * (`level` number, `time` in ms, bindings, fields, `msg`). In a Worker bundle pino falls back to
 * its browser build, which prints objects rather than JSON lines; Workers Logs and
 * `wrangler tail` index JSON lines by field.
 */
export function createConsoleLogger({
  level = 'info',
  bindings = { service: 'podhook' },
  sink = console,
  now = Date.now,
}: ConsoleLoggerOptions = {}): Logger {
  return new ConsoleLogger(LEVELS[level], bindings, sink, now);
}

/**
 * Its methods live on the prototype: a child (one per handler run) is one object, not a set of
 * closures made anew (each a named function the bundle would rename back, at a cost).
 */
class ConsoleLogger implements Logger {
  constructor(
    private readonly threshold: number,
    private readonly bindings: Record<string, unknown>,
    private readonly sink: ConsoleSink,
    private readonly now: () => number,
  ) {}

  debug(obj: object, msg?: string) {
    if (LEVELS.debug >= this.threshold) this.write(LEVELS.debug, 'debug', obj, msg);
  }

  info(obj: object, msg?: string) {
    if (LEVELS.info >= this.threshold) this.write(LEVELS.info, 'log', obj, msg);
  }

  warn(obj: object, msg?: string) {
    if (LEVELS.warn >= this.threshold) this.write(LEVELS.warn, 'warn', obj, msg);
  }

  error(obj: object, msg?: string) {
    if (LEVELS.error >= this.threshold) this.write(LEVELS.error, 'error', obj, msg);
  }

  child(extra: Record<string, unknown>): Logger {
    return new ConsoleLogger(this.threshold, { ...this.bindings, ...extra }, this.sink, this.now);
  }

  private write(level: number, method: keyof ConsoleSink, obj: object, msg: string | undefined) {
    let line: string;
    try {
      line = JSON.stringify({ level, time: this.now(), ...this.bindings, ...obj, msg }, replacer);
    } catch (error) {
      // A cycle or a throwing getter in a handler's fields must not lose the line.
      line = JSON.stringify({ level, time: this.now(), ...this.bindings, msg, log_error: (error as Error).message });
    }
    this.sink[method](line);
  }
}
