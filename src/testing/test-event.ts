import { defaultPayload, type DefaultPayload } from '../core/events/default-payloads.js';
import type { EventPayload } from '../core/events/event-schemas.js';
import type { EventType } from '../core/events/event-types.js';
import type { PodEvent } from '../core/events/define-handler.js';

/** Every field optional, at every depth (arrays are replaced whole). */
export type DeepPartial<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

/** The payload a test event of type T carries: the type's default payload, with anything added. */
export type TestPayload<T extends EventType> = EventPayload<T> & DefaultPayload<T>;

export interface TestEventOverrides<T extends EventType> {
  /** Deep-merged into the type's default payload (objects merged, anything else replaced). */
  payload?: DeepPartial<DefaultPayload<T>> & Record<string, unknown>;
  id?: string;
  /** Default: the payload as JSON, UTF-8. */
  rawBody?: Uint8Array;
  /** Default: `receivedAt`, in Unix seconds. */
  signatureTimestamp?: number;
  /** Default: now. */
  receivedAt?: Date;
  /** Default 1 (the first run); 2 is the first retry. */
  attempt?: number;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof Date);

/** `overrides` merged into `base`: plain objects merge key by key, anything else replaces. */
export function deepMerge<T>(base: T, overrides: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(overrides)) return (overrides === undefined ? base : overrides) as T;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides)) out[key] = key in out ? deepMerge(out[key], value) : value;
  return out as T;
}

/**
 * An event exactly as a handler receives it: a fresh uuid `id`, `type`, the type's default
 * payload deep-merged with `overrides.payload`, its `rawBody`, `signatureTimestamp`,
 * `receivedAt` and `attempt` (1 unless overridden).
 *
 * @example
 * const event = testEvent('pod.backup.failed', { payload: { error: 'disk_full' }, attempt: 2 });
 */
export function testEvent<T extends EventType>(type: T, overrides: TestEventOverrides<T> = {}): PodEvent<T, TestPayload<T>> {
  const receivedAt = overrides.receivedAt ?? new Date();
  const payload = deepMerge(defaultPayload(type, { now: receivedAt.getTime() }), overrides.payload) as TestPayload<T>;
  return {
    id: overrides.id ?? crypto.randomUUID(),
    type,
    payload,
    rawBody: overrides.rawBody ?? new TextEncoder().encode(JSON.stringify(payload)),
    signatureTimestamp: overrides.signatureTimestamp ?? Math.floor(receivedAt.getTime() / 1000),
    receivedAt,
    attempt: overrides.attempt ?? 1,
  };
}
