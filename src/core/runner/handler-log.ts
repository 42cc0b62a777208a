import type { Logger } from '../observability/logger.js';
import { countWork } from '../observability/work-count.js';

/** The levels a handler's `log` writes at. */
export type HandlerLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * One line a handler logged, as data that crosses a thread and prints as JSON: its fields made
 * plain by `loggable` (cut to `MAX_HANDLER_LINE_CHARS`), its message, its level. The receiver
 * writes it with the call's bindings (event id, type, handler, attempt), redacted there.
 */
export interface HandlerLine {
  level: HandlerLevel;
  fields: Record<string, unknown>;
  msg?: string;
}

/**
 * The most a handler's log line may hold, in characters of its fields' text and its message
 * together: beyond it, text is cut with a marker (`…[cut 123456 chars]`) and further fields are
 * dropped (`_cut: N fields`). A handler that logs a 50 MB string writes about 16 KB.
 */
export const MAX_HANDLER_LINE_CHARS = 16_384;
/** Deeper nesting than this is written as `[Object]` / `[Array]`. */
const MAX_DEPTH = 10;
/** Array items beyond this are counted, not written. */
const MAX_ITEMS = 200;

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/**
 * The lowest of a handler's four levels that LOG_LEVEL lets through, as an index into
 * debug/info/warn/error (4: none: `fatal` and `silent` write no handler line).
 */
export function handlerLevelFloor(logLevel: string): number {
  const at = LEVELS.indexOf(logLevel as (typeof LEVELS)[number]);
  return at < 0 ? 1 : Math.max(0, at - 1);
}
const HANDLER_LEVELS: readonly HandlerLevel[] = ['debug', 'info', 'warn', 'error'];

/** A budget of characters for one line. */
interface Budget {
  left: number;
}

function cutText(text: string, budget: Budget): string {
  if (text.length <= budget.left) {
    budget.left -= text.length;
    return text;
  }
  const kept = Math.max(0, budget.left);
  budget.left = 0;
  return `${text.slice(0, kept)}…[cut ${text.length - kept} chars]`;
}

/**
 * A value as a log line carries it: plain JSON data only, whatever the handler passed. Text stands
 * for what neither JSON nor a thread's structured clone can take (a function, a symbol, a bigint,
 * an `AbortSignal` or another object of a class with nothing of its own to show, a cycle, bytes),
 * an error becomes `{ type, message, stack }` (as pino prints one), `toJSON` is honoured, and the
 * whole stays within the line's budget. Never throws.
 */
function plain(value: unknown, budget: Budget, seen: object[]): unknown {
  switch (typeof value) {
    case 'string':
      return cutText(value, budget);
    case 'number':
    case 'boolean':
      budget.left -= 6;
      return value;
    case 'bigint':
      return cutText(`${value}n`, budget);
    case 'undefined':
      return undefined;
    case 'function':
      return cutText(`[Function ${value.name || 'anonymous'}]`, budget);
    case 'symbol':
      return cutText(value.toString(), budget);
  }
  if (value === null) return null;
  const obj = value as object;
  if (seen.includes(obj)) return '[Circular]';
  if (seen.length >= MAX_DEPTH) return Array.isArray(obj) ? '[Array]' : '[Object]';
  if (budget.left <= 0) return '[cut]';
  if (ArrayBuffer.isView(obj) || obj instanceof ArrayBuffer) return `[${obj.constructor.name} ${obj.byteLength} bytes]`;
  seen.push(obj);
  try {
    if (obj instanceof Error) {
      const out: Record<string, unknown> = { type: obj.name, message: cutText(String(obj.message), budget) };
      if (typeof obj.stack === 'string') out.stack = cutText(obj.stack, budget);
      for (const key of Object.keys(obj)) if (!(key in out)) addField(out, key, (obj as unknown as Record<string, unknown>)[key], budget, seen);
      return out;
    }
    const toJSON = (obj as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') {
      let json: unknown;
      try {
        json = toJSON.call(obj);
      } catch {
        return '[toJSON threw]';
      }
      return json === obj ? '[Object]' : plain(json, budget, seen);
    }
    if (Array.isArray(obj)) {
      const n = Math.min(obj.length, MAX_ITEMS);
      const out: unknown[] = [];
      for (let i = 0; i < n && budget.left > 0; i++) {
        const item = plain(obj[i], budget, seen);
        out.push(item === undefined ? null : item);
      }
      if (out.length < obj.length) out.push(`[${obj.length - out.length} more]`);
      return out;
    }
    const out: Record<string, unknown> = {};
    let any = false;
    for (const key of Object.keys(obj)) {
      any = true;
      addField(out, key, (obj as Record<string, unknown>)[key], budget, seen);
    }
    const proto = Object.getPrototypeOf(obj) as object | null;
    // An object of a class with no fields of its own to show (an AbortSignal, a Map, a socket): its name.
    if (!any && proto !== null && proto !== Object.prototype) return `[${(obj.constructor as { name?: string } | undefined)?.name ?? 'Object'}]`;
    return out;
  } catch {
    return '[unreadable]';
  } finally {
    seen.pop();
  }
}

function addField(out: Record<string, unknown>, key: string, value: unknown, budget: Budget, seen: object[]) {
  if (budget.left <= 0) {
    out._cut = ((out._cut as number | undefined) ?? 0) + 1;
    return;
  }
  budget.left -= key.length + 4;
  let v: unknown;
  try {
    v = plain(value, budget, seen);
  } catch {
    v = '[unreadable]';
  }
  if (v !== undefined) out[key] = v;
}

/**
 * A handler's log call as a line: its fields made plain (`plain`, above) and its message, within
 * `MAX_HANDLER_LINE_CHARS` together. `bindings` are the fields of the `log.child(...)` it came from,
 * already plain.
 */
export function handlerLine(level: HandlerLevel, bindings: Record<string, unknown> | undefined, obj: unknown, msg: unknown): HandlerLine {
  // pino's forms: (obj, msg), (msg), (error, msg).
  const message = typeof obj === 'string' && msg === undefined ? obj : msg;
  // The message first, within a quarter of the line: what the line says is never cut for its fields.
  const text = message === undefined ? undefined : cutText(typeof message === 'string' ? message : String(message), { left: MAX_HANDLER_LINE_CHARS / 4 });
  const budget: Budget = { left: MAX_HANDLER_LINE_CHARS - (text?.length ?? 0) };
  const fields: Record<string, unknown> = bindings ? { ...bindings } : {};
  if (obj instanceof Error) addField(fields, 'err', obj, budget, []);
  else if (typeof obj === 'object' && obj !== null) for (const key of Object.keys(obj)) addField(fields, key, (obj as Record<string, unknown>)[key], budget, [obj]);
  else if (obj !== undefined && typeof obj !== 'string') addField(fields, 'value', obj, budget, []);
  const line: HandlerLine = { level, fields };
  if (text !== undefined) line.msg = text;
  return line;
}

/** Where one call's lines go (the receiver writes them, in this thread at once or from a thread in a batch). */
export type LineSink = (line: HandlerLine) => void;

/**
 * The `log` a handler gets: each line made plain and capped where it is logged (`handlerLine`),
 * lines below the level floor (`handlerLevelFloor`) dropped before any work, `child` bindings
 * kept. Never throws: a line that cannot be read becomes text.
 */
export function createHandlerLog(sink: LineSink, floor: number, bindings?: Record<string, unknown>): Logger {
  const write = (at: number) => (obj: object, msg?: string) => {
    if (at < floor) return;
    try {
      sink(handlerLine(HANDLER_LEVELS[at]!, bindings, obj, msg));
    } catch {
      // A line that could not be written is lost, never the handler's run.
    }
  };
  return {
    debug: write(0),
    info: write(1),
    warn: write(2),
    error: write(3),
    child: (more) => (countWork('logger_child'), createHandlerLog(sink, floor, { ...bindings, ...handlerLine('info', undefined, more, undefined).fields })),
  };
}
