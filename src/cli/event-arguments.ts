import { EVENT_TYPES, isEventType, type EventType } from '../core/events/event-types.js';
import { UUID } from '../core/ingest/receive-delivery.js';
import { closest } from './closest.js';
import { UsageError } from './command.js';

/** Checks an event type given on the command line (`trigger`, `deliveries --type`): one of the 11, else a usage error. */
export function parseEventType(text: string): EventType {
  if (isEventType(text)) return text;
  const near = closest(text, EVENT_TYPES);
  throw new UsageError(`unknown event type "${text}"${near ? ` (did you mean ${near}?)` : ''}; the event types are ${EVENT_TYPES.join(', ')}`);
}

/** Checks an event id given on the command line: a uuid as ingest requires, lower-cased as ingest stores it. */
export function parseEventId(text: string, label = 'an event id'): string {
  if (!UUID.test(text)) throw new UsageError(`${JSON.stringify(text)} is not ${label}: event ids are uuids (e.g. 0b6f7c2e-4a1d-4c8e-9f3a-2d5e6b7c8a90)`);
  return text.toLowerCase();
}
