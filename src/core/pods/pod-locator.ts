import { EVENT_TYPES, type EventType } from '../events/event-types.js';
import type { FieldPath, PayloadFields } from '../events/payload-types.js';
import type { OrderFieldNames } from '../order/order-spec.js';
import { fieldAt } from '../shapes/payload-fields.js';

/** Where podhook reads a delivery's pod id, by event type; the types it cannot tell are listed. */
export interface PodLocator {
  /** The pod id of a parsed payload of `type`, or null (no known place, or no string there). */
  podIdOf(type: string, payload: unknown): string | null;
  /** The types with no known place for the pod id: their deliveries are about no pod podhook can name. */
  unknownTypes: EventType[];
  /** Where the places come from: `orderFields` (named once for every type), the learned `payloadFields`, or nothing. */
  source: 'orderFields' | 'payloadFields' | 'none';
}

/**
 * The pod id's place per event type, by the rule ordered handlers use (docs/handlers.md): the
 * `orderFields.podId` a registry names wins for every type; else each type's learned
 * `payloadFields[type].podId` (written by `podhook schemas`); a type with neither has none.
 * podhook never guesses it from a payload.
 */
export function createPodLocator({ fields, orderFields }: { fields?: PayloadFields; orderFields?: OrderFieldNames } = {}): PodLocator {
  const named = orderFields ? orderFields.podId.split('.') : undefined;
  const paths = new Map<string, FieldPath>();
  for (const type of EVENT_TYPES) {
    const path = named ?? fields?.[type]?.podId;
    if (path) paths.set(type, path);
  }
  return {
    podIdOf(type, payload) {
      const path = paths.get(type);
      if (!path) return null;
      const value = fieldAt(payload, path);
      return typeof value === 'string' && value !== '' ? value.toLowerCase() : null;
    },
    unknownTypes: EVENT_TYPES.filter((t) => !paths.has(t)),
    source: named ? 'orderFields' : paths.size > 0 ? 'payloadFields' : 'none',
  };
}
