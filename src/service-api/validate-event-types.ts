import { EVENT_TYPES, isEventType, type EventType } from '../core/events/event-types.js';

export type EventTypesVerdict =
  | { ok: true; eventTypes: EventType[] }
  | { ok: false; message: string; unknown?: string[] };

/**
 * Checks a webhook's `event_types` (spec: POST /pods/v1/webhooks): an array of the 11 event
 * types; an empty array is refused (omit the field for every event). Repeats are dropped.
 */
export function validateEventTypes(value: unknown): EventTypesVerdict {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    return { ok: false, message: 'event_types must be an array of event type strings' };
  }
  if (value.length === 0) {
    return { ok: false, message: 'event_types must not be empty (omit it to receive every event)' };
  }
  const unknown = value.filter((v) => !isEventType(v));
  if (unknown.length > 0) {
    return {
      ok: false,
      unknown,
      message: `unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => JSON.stringify(u)).join(', ')} (allowed: ${EVENT_TYPES.join(', ')})`,
    };
  }
  return { ok: true, eventTypes: [...new Set(value as EventType[])] };
}
