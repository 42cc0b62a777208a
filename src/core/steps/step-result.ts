import { StepError } from './step-errors.js';

/** The largest result a step may record, in bytes of its JSON. */
export const MAX_STEP_RESULT_BYTES = 256 * 1024;

/**
 * Where a value is not JSON, as a path for the message (`.pods[2].created`), or null when it is:
 * plain objects, arrays, strings, finite numbers, booleans and null (a property set to undefined
 * is left out, as JSON does). Not a Date (it would come back as a string), a Map, a class
 * instance, a function, a BigInt, a symbol or a cycle.
 */
function notJson(value: unknown, path: string, seen: Set<object>): string | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : `${path || 'the result'} is ${value}`;
  if (typeof value !== 'object') return `${path || 'the result'} is a ${typeof value}`;
  if (seen.has(value)) return `${path || 'the result'} refers back to itself (a cycle)`;
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return `${path || 'the result'} is a ${value.constructor?.name ?? 'class instance'}`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        if (value[i] === undefined) return `${path}[${i}] is undefined`;
        const bad = notJson(value[i], `${path}[${i}]`, seen);
        if (bad) return bad;
      }
      return null;
    }
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue;
      const bad = notJson(v, `${path}.${k}`, seen);
      if (bad) return bad;
    }
    return null;
  } finally {
    seen.delete(value);
  }
}

/**
 * A step's result as recorded: `{"v":…}` (`{}` for undefined, so undefined and null stay
 * apart). Throws a permanent `StepError` for a result that is not JSON or is over the limit.
 */
export function encodeResult(name: string, value: unknown): { text: string; bytes: number } {
  if (value !== undefined) {
    const bad = notJson(value, '', new Set());
    if (bad) throw new StepError('step_result', `step "${name}": its result must be JSON (plain objects, arrays, strings, numbers, booleans, null): ${bad}`, true);
  }
  const text = value === undefined ? '{}' : `{"v":${JSON.stringify(value)}}`;
  const bytes = new TextEncoder().encode(text).byteLength;
  if (bytes > MAX_STEP_RESULT_BYTES) {
    throw new StepError('step_result', `step "${name}": its result is ${bytes} bytes, over the ${MAX_STEP_RESULT_BYTES} a step may record; record less (an id, not the whole answer)`, true);
  }
  return { text, bytes };
}

/** The value a recorded result stands for. */
export function decodeResult(text: string): unknown {
  const parsed = JSON.parse(text) as { v?: unknown };
  return 'v' in parsed ? parsed.v : undefined;
}
