/**
 * Keys whose values never reach a log line, at any depth. A second line of defence: the code
 * never hands a secret, a signature or an unauthenticated body to a logger in the first place.
 * Both loggers (pino on Node, the console logger on the edge) apply this one rule.
 */
export const REDACTED_KEYS: ReadonlySet<string> = new Set([
  'secret',
  'secrets',
  'signature',
  'apiKey',
  'x-svc-signature',
  'x-api-key',
  'authorization',
]);

export const REDACTED = '[redacted]';

/** How deep `redactFields` looks; JSON deeper than this is left as it is. */
const MAX_DEPTH = 16;

/**
 * The same fields with every value under a `REDACTED_KEYS` key replaced by `[redacted]`, at
 * any depth. Copy-on-write: an object with nothing to redact is returned as it is, so a log line
 * of flat fields (every line podhook writes per delivery) costs a few key lookups and no
 * allocation. Only what JSON would print is walked: plain objects, arrays, errors and other
 * class instances without `toJSON`; never byte arrays. A cycle is not followed twice.
 */
export function redactFields<T extends object>(fields: T): T {
  if (redactedAlready.has(fields)) return fields;
  return redactObject(fields, [fields]) as T;
}

/** Fields redacted already where they were made (a handler's line): `redactFields` passes them as they are. */
const redactedAlready = new WeakSet<object>();

/** Marks fields as redacted already (`createLineWriter`), so a logger's own rule does not walk them again. */
export function markRedacted<T extends object>(fields: T): T {
  redactedAlready.add(fields);
  return fields;
}

function redactObject(obj: object, ancestors: object[]): object {
  if (Array.isArray(obj)) {
    let items: unknown[] | undefined;
    for (let i = 0; i < obj.length; i++) {
      const value: unknown = obj[i];
      const redacted = redactNested(value, ancestors);
      if (redacted !== value) (items ??= obj.slice())[i] = redacted;
    }
    return items ?? obj;
  }
  let copy: Record<string, unknown> | undefined;
  for (const key in obj) {
    if (!Object.hasOwn(obj, key)) continue;
    const value: unknown = (obj as Record<string, unknown>)[key];
    const redacted = REDACTED_KEYS.has(key) ? (value === undefined ? value : REDACTED) : redactNested(value, ancestors);
    if (redacted !== value) (copy ??= shallowCopy(obj))[key] = redacted;
  }
  return copy ?? obj;
}

function redactNested(value: unknown, ancestors: object[]): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (ancestors.length >= MAX_DEPTH || ancestors.includes(value)) return value;
  if (ArrayBuffer.isView(value) || typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  ancestors.push(value);
  try {
    return redactObject(value, ancestors);
  } finally {
    ancestors.pop();
  }
}

/**
 * A copy that prints as the original would. An error stays an error of the same class (pino's
 * serializer reads its type from that), with its message and stack as own fields.
 */
function shallowCopy(obj: object): Record<string, unknown> {
  if (obj instanceof Error) {
    return Object.assign(Object.create(Object.getPrototypeOf(obj) as object) as Record<string, unknown>, { message: obj.message, stack: obj.stack }, obj);
  }
  return { ...obj };
}
