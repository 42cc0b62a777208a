import type { Delivery } from '../delivery.js';
import { inspectBody } from '../ingest/inspect-body.js';
import type { PayloadSample } from './infer-shapes.js';

/** Why a stored delivery is not a sample. */
export type SkipReason = 'quarantined' | 'unknown_type' | 'not_json' | 'not_an_object';

/**
 * A stored delivery as a sample to learn from, or why it is not one: a body that is not a JSON
 * object (read as ingest reads it: UTF-8, then JSON), a type that is not one of the 11, or a
 * quarantined delivery (its event type may not be the genuine one: it was sent as a conflict).
 */
export function deliverySample(delivery: Pick<Delivery, 'eventType' | 'body' | 'status' | 'receivedAt'>): PayloadSample | { skipped: SkipReason } {
  if (delivery.status === 'quarantined') return { skipped: 'quarantined' };
  const inspected = inspectBody(delivery.eventType, delivery.body);
  if (inspected.status === 'ignored') return { skipped: 'unknown_type' };
  if (inspected.status === 'dead') return { skipped: 'not_json' };
  const payload = inspected.payload;
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return { skipped: 'not_an_object' };
  return { eventType: delivery.eventType, payload, receivedAt: delivery.receivedAt };
}
