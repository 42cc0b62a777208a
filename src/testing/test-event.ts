import { defaultPayload, type DefaultPayload } from '../core/events/default-payloads.js';
import type { EventPayload } from '../core/events/event-schemas.js';
import type { EventType } from '../core/events/event-types.js';
import type { PodEvent } from '../core/events/define-handler.js';
import type { PayloadTypes } from '../core/events/payload-types.js';
import { samplePayload } from '../core/shapes/sample-payload.js';
import type { PayloadShapes } from '../core/shapes/shape.js';
import { projectShapes } from './project-payloads.js';

/** Every field optional, at every depth (arrays are replaced whole). */
export type DeepPartial<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

/** What a test event of type T is built from: its learned payload type, else the type's default payload. */
type BasePayload<T extends EventType> = T extends keyof PayloadTypes ? PayloadTypes[T] : DefaultPayload<T>;

/**
 * The payload a test event of type T carries: the type handlers/_payloads.ts learned for T, else
 * the type's default payload (typed as handlers see it, with the default's fields).
 */
export type TestPayload<T extends EventType> = T extends keyof PayloadTypes ? PayloadTypes[T] : EventPayload<T> & DefaultPayload<T>;

export interface TestEventOverrides<T extends EventType> {
  /** Deep-merged into the payload it is built from (objects merged, anything else replaced). */
  payload?: DeepPartial<BasePayload<T>> & Record<string, unknown>;
  id?: string;
  /** Default: the payload as JSON, UTF-8. */
  rawBody?: Uint8Array;
  /** Default: `receivedAt`, in Unix seconds. */
  signatureTimestamp?: number;
  /** Default: now. */
  receivedAt?: Date;
  /** Default 1 (the first run); 2 is the first retry. */
  attempt?: number;
  /**
   * The learned shapes to build the payload from (default: the project's, handlers/_payloads.ts);
   * null, or a type without a shape there: the type's default payload.
   */
  shapes?: PayloadShapes | null;
  /** Seeds the uuids of a payload built from a shape (default: random). */
  seed?: number;
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
 * An event exactly as a handler receives it: a fresh uuid `id`, `type`, a payload deep-merged
 * with `overrides.payload`, its `rawBody`, `signatureTimestamp`, `receivedAt` and `attempt` (1
 * unless overridden). The payload is made from the type's learned shape when handlers/_payloads.ts
 * has one (`samplePayload`: the fields every sample had, recorded values, uuids, date-times at
 * `receivedAt`), so it looks like real traffic; else it is the type's default payload.
 *
 * @example
 * const event = testEvent('pod.backup.failed', { payload: { error: 'disk_full' }, attempt: 2 });
 */
export function testEvent<T extends EventType>(type: T, overrides: TestEventOverrides<T> = {}): PodEvent<T, TestPayload<T>> {
  const receivedAt = overrides.receivedAt ?? new Date();
  const now = receivedAt.getTime();
  const shapes = overrides.shapes === undefined ? projectShapes : overrides.shapes;
  const learned = shapes !== null && Object.hasOwn(shapes.types, type) ? shapes.types[type]!.shape : undefined;
  const base = learned === undefined ? defaultPayload(type, { now }) : samplePayload(learned, { now, seed: overrides.seed });
  const payload = deepMerge(base, overrides.payload) as TestPayload<T>;
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
