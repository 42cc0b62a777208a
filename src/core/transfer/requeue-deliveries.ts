import { systemClock, type Clock } from '../clock.js';
import type { Delivery, DeliveryStore, RequeueOptions } from '../delivery-store.js';
import type { Router } from '../dispatch/router.js';
import { firstAttemptRuns, processedAtFirstAttempt } from './first-attempt-runs.js';

export interface RequeuerOptions {
  store: Pick<DeliveryStore, 'leaseEvents' | 'handlerRuns' | 'requeue' | 'releaseLeases' | 'dropSteps'>;
  router: Router;
  clock?: Clock;
  /** How long the requeue holds its lease on the rows (they are released at once when written). */
  leaseMs?: number;
}

/** What one requeue asks for. */
export interface RequeueCallOptions {
  /** Run only the handler of this name again (else every handler that takes the type). */
  handler?: string;
  /**
   * Drop the durable steps those handlers recorded for each delivery first, so they run from the
   * start (`replay --fresh`: a handler changed under a parked run). Else a run resumes after them.
   */
  fresh?: boolean;
}

export interface RequeueResult {
  /** Deliveries handed back to the dispatcher. */
  requeued: number;
  /** Held by a running dispatcher (left alone), or no handler (or not the one named) takes the type. */
  skipped: number;
}

/**
 * Hands stored deliveries back to the dispatcher to run their handlers again, the way
 * `podhook replay` runs them but not in the caller: every handler that takes the type (or only
 * the one named) is marked `queued` in the ledger, so it runs again even if it had succeeded,
 * with its attempt number following on; the delivery becomes `queued` and due now. A handler with
 * durable steps resumes after the ones it recorded, or, `fresh`, runs from the start. Rows a live
 * dispatcher holds are left alone. The caller wakes the dispatcher.
 */
export function createRequeuer({ store, router, clock = systemClock, leaseMs = 60_000 }: RequeuerOptions) {
  return async function requeue(eventIds: readonly string[], { handler: only, fresh = false }: RequeueCallOptions = {}): Promise<RequeueResult> {
    const owner = `requeue-${crypto.randomUUID()}`;
    const leased = await store.leaseEvents({ eventIds, owner, now: clock(), leaseMs });
    const ledger = leased.length === 0 ? [] : await store.handlerRuns(leased.map((d) => d.eventId));
    const requests: RequeueOptions['deliveries'][number][] = [];
    for (const d of leased) {
      const rows = ledger.filter((r) => r.eventId === d.eventId);
      const runs = ledgerMarks(d, router, rows, only);
      if (runs) requests.push({ eventId: d.eventId, runs, history: firstAttemptRuns(d, router.handlersFor(d.eventType), rows) });
    }
    try {
      // Under the lease, so no dispatcher runs them meanwhile. Not in the requeue's transaction (D1
      // has none across statements): a requeue that fails after this leaves the delivery as it was,
      // its steps gone, and the next replay starts it from the top, as a fresh one would.
      if (fresh) {
        for (const r of requests) {
          const d = leased.find((l) => l.eventId === r.eventId)!;
          for (const h of router.handlersFor(d.eventType)) if (only === undefined || h.name === only) await store.dropSteps(r.eventId, h.name);
        }
      }
      const requeued = await store.requeue({ owner, now: clock(), deliveries: requests });
      return { requeued, skipped: eventIds.length - requeued };
    } finally {
      // The rows not requeued (no handler takes them) go back as they were.
      await store.releaseLeases(owner);
    }
  };
}

/** The ledger rows that make the dispatcher run `only` (or every handler of the type) again; null when none applies. */
function ledgerMarks(
  d: Delivery,
  router: Router,
  rows: readonly { handler: string; attempts: number }[],
  only: string | undefined,
): RequeueOptions['deliveries'][number]['runs'] | null {
  const handlers = router.handlersFor(d.eventType);
  if (!handlers.some((h) => only === undefined || h.name === only)) return null;
  // Never dispatched (ignored, or dead at ingest): the dispatcher reads no ledger for it and runs every handler.
  if (d.attempts === 0) return [];
  // A delivery processed at its first attempt has no ledger rows: each handler ran once, as replay counts.
  const first = processedAtFirstAttempt(d, rows);
  const ranBefore = (name: string) => rows.find((r) => r.handler === name)?.attempts ?? (first ? d.attempts : 0);
  const marks: { handler: string; status: 'queued' | 'succeeded'; attempts: number }[] = [];
  for (const h of handlers) {
    if (only === undefined || h.name === only) marks.push({ handler: h.name, status: 'queued', attempts: ranBefore(h.name) });
    // The others of a processed delivery succeeded: a row keeps them from running again.
    else if (d.status === 'processed' && !rows.some((r) => r.handler === h.name)) marks.push({ handler: h.name, status: 'succeeded', attempts: ranBefore(h.name) });
  }
  return marks;
}
