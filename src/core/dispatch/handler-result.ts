import type { HandlerRun } from '../delivery-store.js';

/** How one handler call ended. */
export type HandlerOutcome = 'succeeded' | 'failed' | 'timeout' | 'invalid_payload' | 'interrupted' | 'skipped' | 'parked';

/** The result of one handler call. */
export interface HandlerResult {
  handler: string;
  attempt: number;
  ok: boolean;
  /** Retrying cannot help: the payload failed the handler's schema. */
  permanent: boolean;
  /** Ended by `abortAll` (shutdown) or `abortDelivery` (lease lost): the call did not finish, so it is no attempt at all. */
  interrupted: boolean;
  /** What it failed with, as one line: `<error name>: <message>`. */
  error: string | null;
  /** The name of what the handler threw (`TypeError`, …), when it threw an Error. */
  errorName?: string;
  /** How long the call took (schema check included). */
  durationMs: number;
  /** How the call ended. */
  outcome: HandlerOutcome;
  /**
   * The call did not finish and is no attempt, but the delivery is not given up either: it is due
   * again at this time (epoch ms), its attempt count unchanged: a run parked at a sleep (outcome
   * `parked`), or a call its handler thread's replacement cut short (`interrupted`).
   */
  waitUntil?: number;
  /** A durable step failed: that step's own try, which the retry ladder counts (each step gets the whole ladder). */
  stepAttempt?: number;
  /** What the run did with its durable steps (absent: it used none). */
  steps?: { succeeded: number; failed: number; replayed: number };
}

/** A result settled without calling the handler (a gate's skip or failure). */
export function settledResult(handler: string, attempt: number, outcome: 'skipped' | 'failed', error: string): HandlerResult {
  return { handler, attempt, ok: outcome === 'skipped', permanent: false, interrupted: false, error, durationMs: 0, outcome };
}

/** How long an attempt's handlers ran: they run together, so the slowest one; null when none ran. */
export function attemptDuration(results: readonly HandlerResult[]): number | null {
  return results.length === 0 ? null : Math.max(...results.map((r) => r.durationMs));
}

/** The ledger rows of one attempt's results (each also a row of the run history). */
export function ledgerRuns(eventId: string, results: readonly HandlerResult[]): HandlerRun[] {
  return results.map((r) => ({
    eventId,
    handler: r.handler,
    // One that waits runs again (`queued`), counted as no failure.
    status: r.outcome === 'skipped' ? 'skipped' : r.ok ? 'succeeded' : r.waitUntil !== undefined ? 'queued' : 'failed',
    attempts: r.attempt,
    lastError: r.error,
    durationMs: r.durationMs,
    outcome: r.outcome,
  }));
}

/** The runs skipped in one attempt, as one line: `handler: <why>; handler: <why>`. */
export function describeSkips(results: readonly HandlerResult[]): string | null {
  return results.filter((r) => r.outcome === 'skipped').map((r) => `${r.handler}: ${r.error}`).join('; ').slice(0, 2000) || null;
}

/** The failures of one attempt as one `last_error` line: `handler: error; handler: error`. */
export function describeFailures(results: readonly HandlerResult[]): string | null {
  const failures = results.filter((r) => !r.ok && r.waitUntil === undefined);
  if (failures.length === 0) return null;
  return failures
    .map((f) => `${f.handler}: ${f.error}`)
    .join('; ')
    .slice(0, 2000) || null;
}
