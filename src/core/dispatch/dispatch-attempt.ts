import { createBatcher } from './batcher.js';
import type { Clock } from '../clock.js';
import type { Delivery, DispatchOutcome, DispatchStore, HandlerRun } from '../delivery-store.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Logger } from '../observability/logger.js';
import type { AttemptGate } from './attempt-gate.js';
import { decideOutcome, type AttemptReport, type OutcomePolicy } from './decide-outcome.js';
import type { DeliveryFinishedDetail, DispatchEvents } from './dispatch-events.js';
import type { HandlerResult } from './handler-result.js';
import type { Redact } from '../observability/redact-secrets.js';
import type { CallWrapper, HandlerRunner } from '../runner/handler-runner.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { InvalidBodyError, lazyPayload } from './parse-delivery-body.js';
import type { Router } from './router.js';
import { runAttemptHandlers } from './run-attempt-handlers.js';

export interface DispatchAttemptOptions {
  store: Pick<DispatchStore, 'completeDispatch'>;
  /** Decides what runs, waits or is settled in each attempt. */
  gate: AttemptGate;
  /** Asks for a drain at this time (a delivery due again later), or at once. */
  wakeAt: (at: number) => void;
  router: Router;
  /** Where handler code runs. */
  runner: Pick<HandlerRunner, 'run'>;
  /** Wraps each handler call (the instruments'). */
  wrap?: CallWrapper;
  /** Hides secrets in handlers' errors, once, where results come back. */
  redact: Redact;
  /** Whose claim holds the delivery now: an attempt whose claim lost it records nothing. */
  leases: Pick<LeaseKeeper, 'claimOf'>;
  logger: Logger;
  clock: Clock;
  policy: OutcomePolicy;
  events: DispatchEvents;
  /** How outcome writes are deferred to share a transaction (Node: setImmediate). */
  schedule?: (flush: () => void) => void;
}

/**
 * Runs one attempt of a leased delivery in its slot and records the outcome; `free` gives the
 * slot back once the handlers are done. `parsed` is the body ingest already parsed (hand-offs).
 */
export type DispatchAttempt = (
  delivery: Delivery,
  claimId: string,
  ledger: readonly HandlerRun[],
  parsed: unknown,
  free: () => void,
) => Promise<void>;

/**
 * One delivery's attempt: the handlers that have not yet succeeded for it (the per-handler
 * ledger), as the gate plans them; the outcome decided by `decideOutcome`, and its write, fenced by
 * the claim id and batched with the other outcomes ready at the same turn of the event loop.
 */
export function createDispatchAttempt({ store, gate, wakeAt, router, runner, wrap, redact, leases, logger, clock, policy, events, schedule }: DispatchAttemptOptions): DispatchAttempt {
  /** Resolves whether the outcome was recorded (false: its claim lost the row meanwhile). */
  const complete = createBatcher<DispatchOutcome, boolean>({
    execute: async (batch) => {
      const recorded = new Set(await store.completeDispatch(batch));
      return batch.map((o) => recorded.has(o.eventId));
    },
    schedule,
  });

  return async function dispatchOne(delivery, claimId, ledger, parsed, free) {
    const handlers = router.handlersFor(delivery.eventType);
    let report: AttemptReport;
    let results: readonly HandlerResult[] = NO_RESULTS;
    let settle: ((outcome: DispatchOutcome, succeeded: (handler: string) => boolean) => boolean) | undefined;
    if (handlers.length === 0) {
      report = { kind: 'no-handler' };
    } else {
      // Parsed on this thread only if the gate asks (an ordered handler's key); the runner parses where it runs.
      const payload = lazyPayload(delivery.body, parsed);
      try {
        // A first attempt (no ledger) runs every handler; a retry skips the ones that succeeded (or were skipped).
        const pending =
          ledger.length === 0 ? handlers : handlers.filter((h) => !ledger.some((r) => r.handler === h.name && (r.status === 'succeeded' || r.status === 'skipped')));
        const attemptOf = (h: HandlerDefinition) => (ledger.find((r) => r.handler === h.name)?.attempts ?? 0) + 1;
        const plan = await gate.open({ delivery, payload: payload.get, pending, now: clock(), attemptOf, events, logger });
        settle = plan?.settle;
        const ran = await runAttemptHandlers({
          delivery, parsed: payload.known(), plan, pending, attemptOf, runner, wrap, events, now: clock, claimId, logger, redact,
        });
        results = ran.results;
        report = { kind: 'ran', results, hadLedger: ledger.length > 0, waitUntil: ran.waitUntil };
      } catch (error) {
        if (!(error instanceof InvalidBodyError)) throw error;
        report = { kind: 'invalid-body', error: error.detail };
      }
    }
    free(); // the slot is for handlers; the outcome write that follows needs none
    const outcome = decideOutcome(delivery, report, clock(), policy);
    // Interrupted by shutdown: no outcome, so `stop` gives the lease back with the attempts unchanged.
    // Lease lost: the claim that holds it now records the outcome (the store fences this one anyway).
    if (outcome === null || leases.claimOf(delivery.eventId) !== claimId) return;
    outcome.claimId = claimId;
    const drainAfter = settle?.(outcome, (name) => results.some((r) => r.handler === name && r.ok)) ?? false;
    if (!(await complete(outcome))) {
      logger.warn({ event_id: delivery.eventId, claim_id: claimId, status: outcome.status }, 'lease lost: outcome not recorded, another claim holds the delivery');
      events.emit('leaseLost', 'outcome_fenced');
      return;
    }
    if (drainAfter) wakeAt(0);
    if (outcome.status === 'queued' && outcome.nextAttemptAt !== null) wakeAt(outcome.nextAttemptAt);
    events.emit('deliveryFinished', delivery.eventType, outcome.status, { eventId: delivery.eventId, attempt: outcome.attempts, failures: failuresOf(results) });
    if (outcome.status === 'dead') {
      logger.warn({ event_id: delivery.eventId, event_type: delivery.eventType, attempts: outcome.attempts, last_error: outcome.lastError }, 'delivery dead');
    } else if (outcome.status === 'failed') {
      logger.info(
        { event_id: delivery.eventId, event_type: delivery.eventType, attempts: outcome.attempts, next_attempt_at: new Date(outcome.nextAttemptAt!).toISOString() },
        'delivery will retry',
      );
    }
  };
}

const NO_RESULTS: readonly HandlerResult[] = [];
const NO_FAILURES: DeliveryFinishedDetail['failures'] = Object.freeze([]);

function failuresOf(results: readonly HandlerResult[]): DeliveryFinishedDetail['failures'] {
  let failures: Array<{ handler: string; error: string }> | undefined;
  for (const r of results) if (!r.ok) (failures ??= []).push({ handler: r.handler, error: r.error ?? '' });
  return failures ?? NO_FAILURES;
}
