import type { EventPayload } from '../events/event-schemas.js';
import type { EventType } from '../events/event-types.js';

/**
 * The event a wait resolves with: the later delivery, as a handler's event reads (its type
 * narrows its payload), without its raw body.
 */
export type WaitedEvent<T extends EventType = EventType> = T extends EventType
  ? { id: string; type: T; signatureTimestamp: number; receivedAt: Date; payload: EventPayload<T> }
  : never;

/** What a run's wait asks of the receiver (its journal): the wait, under the run's claim. */
export interface WaitAsk {
  eventId: string;
  handler: string;
  /** The wait's step position in its run. */
  seq: number;
  name: string;
  podId: string;
  types: readonly string[];
  /** The waiting delivery's receipt time (epoch ms): only deliveries received after it match. */
  afterAt: number;
  /** When the wait times out (epoch ms). */
  untilAt: number;
}

/** A waited event as it crosses threads and is recorded: its receipt time in epoch ms. */
export interface WaitedRecord {
  id: string;
  type: string;
  signatureTimestamp: number;
  receivedAt: number;
  payload: unknown;
}

/**
 * The answer: the first match received after the waiting delivery (with its receipt's trace
 * context, for the wait's span to link), or none by the deadline
 * (`timedOut`), or none yet: the run parks until `parkUntil` (the deadline, or sooner, for a
 * look of its own while other processes learn that it waits).
 */
export type WaitAnswer = { matched: WaitedRecord; traceParent?: string | null } | { timedOut: true } | { parkUntil: number };

/** A recorded match as the handler gets it back. */
export function waitedEvent(r: WaitedRecord | null): WaitedEvent | null {
  return r === null ? null : ({ id: r.id, type: r.type, signatureTimestamp: r.signatureTimestamp, receivedAt: new Date(r.receivedAt), payload: r.payload } as WaitedEvent);
}
