import { describe, expect, it } from 'vitest';
import { decideOutcome, type OutcomePolicy } from '../../../src/core/dispatch/decide-outcome.js';
import type { HandlerResult } from '../../../src/core/dispatch/handler-result.js';

const policy: OutcomePolicy = { owner: 'me', maxAttempts: 3, backoff: { baseMs: 1000, maxMs: 60_000, random: () => 0.5 } };
const now = 1_790_000_000_000;
const delivery = (attempts = 0) => ({ eventId: 'e1', attempts });
const ok = (handler: string, attempt = 1): HandlerResult => ({ handler, attempt, ok: true, permanent: false, interrupted: false, error: null, durationMs: 0, outcome: 'succeeded' });
const fail = (handler: string, error: string, extra: Partial<HandlerResult> = {}): HandlerResult => ({
  handler,
  attempt: 1,
  ok: false,
  permanent: false,
  interrupted: false,
  error,
  durationMs: 0,
  outcome: 'failed',
  ...extra,
});

describe('decideOutcome', () => {
  it('marks a type nobody handles ignored, counting no attempt', () => {
    expect(decideOutcome(delivery(), { kind: 'no-handler' }, now, policy)).toEqual({
      eventId: 'e1',
      owner: 'me',
      status: 'ignored',
      attempts: 0,
      lastError: 'no handler for this event type',
      nextAttemptAt: null,
      now,
      runs: [],
      durationMs: null,
    });
  });

  it('marks a body handlers cannot read dead at once', () => {
    expect(decideOutcome(delivery(), { kind: 'invalid-body', error: 'invalid_json: x' }, now, policy)).toMatchObject({
      status: 'dead',
      attempts: 0,
      lastError: 'invalid_json: x',
      nextAttemptAt: null,
    });
  });

  it('processes a first attempt where every handler succeeded, with no ledger rows', () => {
    expect(decideOutcome(delivery(), { kind: 'ran', results: [ok('a'), ok('b')], hadLedger: false }, now, policy)).toMatchObject({
      status: 'processed',
      attempts: 1,
      lastError: null,
      nextAttemptAt: null,
      runs: [],
    });
  });

  it('records the runs of a successful retry in the ledger', () => {
    const outcome = decideOutcome(delivery(1), { kind: 'ran', results: [ok('a', 2)], hadLedger: true }, now, policy);
    expect(outcome).toMatchObject({ status: 'processed', attempts: 2, lastError: null });
    expect(outcome!.runs).toEqual([{ eventId: 'e1', handler: 'a', status: 'succeeded', attempts: 2, lastError: null, durationMs: 0, outcome: 'succeeded' }]);
  });

  it('fails with backoff when a handler failed before the last attempt, recording every run', () => {
    const outcome = decideOutcome(delivery(1), { kind: 'ran', results: [fail('a', 'Error: x'), ok('b')], hadLedger: true }, now, policy);
    // Attempt 2 with base 1000 ms: 2000 ms, half fixed and half jitter (pinned to 0.5).
    expect(outcome).toMatchObject({ status: 'failed', attempts: 2, lastError: 'a: Error: x', nextAttemptAt: now + 1500 });
    expect(outcome!.runs.map((r) => [r.handler, r.status])).toEqual([
      ['a', 'failed'],
      ['b', 'succeeded'],
    ]);
  });

  it('is dead at the last attempt', () => {
    expect(decideOutcome(delivery(2), { kind: 'ran', results: [fail('a', 'Error: x')], hadLedger: true }, now, policy)).toMatchObject({
      status: 'dead',
      attempts: 3,
      nextAttemptAt: null,
      lastError: 'a: Error: x',
    });
  });

  it('is dead at once when a failure is permanent (the payload failed a schema)', () => {
    const results = [fail('a', 'invalid_payload: pod_id: bad', { permanent: true }), fail('b', 'Error: y')];
    expect(decideOutcome(delivery(), { kind: 'ran', results, hadLedger: false }, now, policy)).toMatchObject({
      status: 'dead',
      attempts: 1,
      lastError: 'a: invalid_payload: pod_id: bad; b: Error: y',
    });
  });

  it('decides nothing when a handler was interrupted by shutdown, whatever the others did', () => {
    const results = [ok('a'), fail('b', 'Error: shutting down', { interrupted: true }), fail('c', 'Error: z', { permanent: true })];
    expect(decideOutcome(delivery(7), { kind: 'ran', results, hadLedger: true }, now, policy)).toBeNull();
  });
});
