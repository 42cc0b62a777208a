import type { Delivery, HandlerAttempt, HandlerRun } from '../delivery-store.js';
import type { HandlerDefinition } from '../events/define-handler.js';

/** Whether a delivery was processed at its first attempt: it left no ledger rows, its row says it all. */
export const processedAtFirstAttempt = (d: Pick<Delivery, 'status'>, ledger: readonly unknown[]) => ledger.length === 0 && d.status === 'processed';

/**
 * The runs a delivery processed at its first attempt made without leaving a row (each handler of
 * its type once, succeeded, at `processed_at`, on `ran_by`), for a later run to record in the
 * history before its own, so the delivery's runs stay complete and in order. Empty otherwise.
 */
export function firstAttemptRuns(d: Delivery, handlers: readonly HandlerDefinition[], ledger: readonly HandlerRun[]): HandlerAttempt[] {
  if (!processedAtFirstAttempt(d, ledger)) return [];
  return handlers.map((h) => ({
    eventId: d.eventId,
    handler: h.name,
    attempt: d.attempts,
    outcome: 'succeeded',
    error: null,
    durationMs: d.durationMs ?? null,
    at: d.processedAt ?? d.receivedAt,
    ranBy: d.ranBy ?? '',
  }));
}
