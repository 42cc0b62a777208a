import { EVENT_TYPES } from '../events/event-types.js';
import type { EventFields, FieldPath, PayloadFields } from '../events/payload-types.js';
import type { PayloadShapes, Shape, StringFormat } from './shape.js';

/** Where a pod id is looked for, in this order: the first place that always holds a uuid wins. */
export const POD_ID_PATHS: readonly FieldPath[] = [['pod', 'id'], ['pod_id'], ['data', 'pod', 'id'], ['data', 'pod_id']];

/** The keys an event time is looked for under, in this order: at the top level first, then under `data`. */
export const OCCURRED_AT_KEYS = ['occurred_at', 'occurredAt', 'event_time', 'eventTime', 'timestamp', 'time', 'emitted_at', 'sent_at'] as const;

const OCCURRED_AT_PATHS: readonly FieldPath[] = [...OCCURRED_AT_KEYS.map((k) => [k]), ...OCCURRED_AT_KEYS.map((k) => ['data', k])];

/** The shape at `path` when every sample had a value there (each object on the way always present, never null), else undefined. */
function alwaysAt(shape: Shape, path: FieldPath): Shape | undefined {
  let place = shape;
  for (const key of path) {
    const { properties } = place;
    if (place.types.length !== 1 || place.types[0] !== 'object' || properties === undefined) return undefined;
    if (!Object.hasOwn(properties, key) || !place.required?.includes(key)) return undefined;
    place = properties[key]!;
  }
  return place;
}

const alwaysA = (format: StringFormat) => (shape: Shape | undefined) =>
  shape !== undefined && shape.types.length === 1 && shape.types[0] === 'string' && shape.format === format;

/**
 * Where one type's pod id and event time are, by the documented rules: `podId` is the first of
 * `pod.id`, `pod_id`, `data.pod.id`, `data.pod_id` that is a uuid string in every sample;
 * `occurredAt` the first top-level key of `OCCURRED_AT_KEYS` (then the same under `data`) that is
 * an RFC 3339 date-time string in every sample. Never the pod's own `created_at`.
 */
export function findEventFields(shape: Shape): EventFields {
  const podId = POD_ID_PATHS.find((path) => alwaysA('uuid')(alwaysAt(shape, path)));
  const occurredAt = OCCURRED_AT_PATHS.find((path) => alwaysA('date-time')(alwaysAt(shape, path)));
  return { ...(podId && { podId }), ...(occurredAt && { occurredAt }) };
}

/** `findEventFields` for every event type with a learned shape, in the published order. */
export function findPayloadFields(shapes: PayloadShapes): PayloadFields {
  return Object.fromEntries(EVENT_TYPES.flatMap((type) => (Object.hasOwn(shapes.types, type) ? [[type, findEventFields(shapes.types[type]!.shape)]] : [])));
}

/** The value at `path` in a payload, or undefined where a step is missing or not an object. */
export function fieldAt(payload: unknown, path: FieldPath): unknown {
  let value = payload;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}
