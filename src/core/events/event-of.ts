import type { Delivery } from '../delivery.js';
import type { PodEvent } from './define-handler.js';
import type { EventType } from './event-types.js';

/** What an event is built from: a stored delivery's identity, times and body. */
export type EventSource = Pick<Delivery, 'eventId' | 'eventType' | 'signatureT' | 'receivedAt' | 'body'>;

/** The event a handler (and an ordered handler's `order.key` and `order.at`) sees. */
export function eventOf(d: EventSource, payload: unknown, attempt: number): PodEvent<EventType, unknown> {
  return {
    id: d.eventId,
    type: d.eventType as EventType,
    signatureTimestamp: d.signatureT,
    receivedAt: new Date(d.receivedAt),
    payload,
    rawBody: d.body,
    attempt,
  };
}
