import { retryDelayMs, type BackoffOptions } from './backoff.js';
import type { DispatchOutcome, HandlerRun } from '../delivery-store.js';
import type { Delivery } from '../delivery.js';
import { attemptDuration, describeFailures, describeSkips, ledgerRuns, type HandlerResult } from './handler-result.js';

/** What one dispatch attempt found: no handler, a body handlers cannot read, or the handlers' results. */
export type AttemptReport =
  | { kind: 'no-handler' }
  | { kind: 'invalid-body'; error: string }
  | {
      kind: 'ran';
      /** The handlers that ran, and those the gate settled without a run (a skip is a result with outcome `skipped`). */
      results: readonly HandlerResult[];
      /** The delivery had ledger rows (an earlier attempt failed): this attempt's runs are recorded too. */
      hadLedger: boolean;
      /** Handlers that wait (the gate let them not run yet): the earliest time to look again, else undefined. */
      waitUntil?: number;
    };

export interface OutcomePolicy {
  /** The lease owner writing the outcome. */
  owner: string;
  /** Dispatch attempts before a delivery is `dead`. */
  maxAttempts: number;
  backoff: BackoffOptions;
}

/**
 * Decides how one dispatch attempt ends: `processed`, `failed` with a backoff, `dead` (a
 * permanent failure, an unreadable body or the last attempt), `ignored` (no handler), or `queued`
 * again when a handler waits (nothing failed). Null when
 * a handler was interrupted by shutdown: that is no attempt, so nothing is written and the lease
 * is given back with the attempt count unchanged. Pure: time and jitter come in as arguments.
 */
export function decideOutcome(
  delivery: Pick<Delivery, 'eventId' | 'attempts'>,
  report: AttemptReport,
  now: number,
  { owner, maxAttempts, backoff }: OutcomePolicy,
): DispatchOutcome | null {
  if (report.kind === 'no-handler') {
    return outcome(delivery.eventId, owner, 'ignored', delivery.attempts, 'no handler for this event type', null, now, []);
  }
  if (report.kind === 'invalid-body') {
    return outcome(delivery.eventId, owner, 'dead', delivery.attempts, report.error, null, now, []);
  }
  const { results, hadLedger } = report;
  let waitUntil = report.waitUntil;
  let failed = false;
  let permanent = false;
  let skipped = false;
  /** How far up the retry ladder the failures are: a durable step counts its own tries (each step gets the whole ladder). */
  let ladder = 0;
  for (const r of results) {
    // Parked at a sleep, or cut short but due again: a wait, neither a success nor a failure.
    if (r.waitUntil !== undefined) {
      waitUntil = Math.min(waitUntil ?? Infinity, r.waitUntil);
      continue;
    }
    if (r.interrupted) return null;
    if (r.outcome === 'skipped') skipped = true;
    if (!r.ok) {
      failed = true;
      if (r.permanent) permanent = true;
      ladder = Math.max(ladder, r.stepAttempt ?? delivery.attempts + 1);
    }
  }
  // An attempt that ends with a handler waiting (nothing failed) is not counted: the delivery's
  // attempts are the tries that ended in an outcome.
  const attempts = waitUntil !== undefined && !failed ? delivery.attempts : delivery.attempts + 1;
  // A delivery processed at its first attempt needs no ledger rows: its status says every handler
  // succeeded. One with a handler still waiting records what ran, so it does not run again.
  const runs: HandlerRun[] = !failed && !hadLedger && !skipped && waitUntil === undefined ? [] : ledgerRuns(delivery.eventId, results);
  const durationMs = attemptDuration(results);
  // A skipped run says why where a delivery's errors are read.
  const note = skipped ? describeSkips(results) : null;
  if (!failed && waitUntil !== undefined) return outcome(delivery.eventId, owner, 'queued', attempts, note, waitUntil, now, runs, durationMs);
  if (!failed) return outcome(delivery.eventId, owner, 'processed', attempts, note, null, now, runs, durationMs);
  const lastError = describeFailures(results);
  if (permanent || ladder >= maxAttempts) return outcome(delivery.eventId, owner, 'dead', attempts, lastError, null, now, runs, durationMs);
  // A handler that waits (parked) beside the one that failed is due again at its own time, if sooner.
  const retryAt = Math.min(now + retryDelayMs(ladder, backoff), waitUntil ?? Infinity);
  return outcome(delivery.eventId, owner, 'failed', attempts, lastError, retryAt, now, runs, durationMs);
}

function outcome(
  eventId: string,
  owner: string,
  status: DispatchOutcome['status'],
  attempts: number,
  lastError: string | null,
  nextAttemptAt: number | null,
  now: number,
  runs: HandlerRun[],
  durationMs: number | null = null,
): DispatchOutcome {
  return { eventId, owner, status, attempts, lastError, nextAttemptAt, now, runs, durationMs };
}
