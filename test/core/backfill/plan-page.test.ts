import { describe, expect, it } from 'vitest';
import type { BackfillCandidate } from '../../../src/core/backfill/backfill-store.js';
import { ledgerMarks, planPage, takeFromPage } from '../../../src/core/backfill/plan-page.js';
import type { Delivery } from '../../../src/core/delivery.js';

const delivery = (n: number, over: Partial<Delivery> = {}): Delivery => ({
  eventId: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  eventType: 'pod.status.changed',
  signatureT: 1,
  body: new TextEncoder().encode('{}'),
  headers: {},
  receivedAt: 1_000 + n,
  lastReceivedAt: 1_000 + n,
  deliveryCount: 1,
  status: 'processed',
  attempts: 1,
  lastError: null,
  nextAttemptAt: null,
  processedAt: 2_000,
  ...over,
});
const page = (handled: boolean[]): BackfillCandidate[] => handled.map((h, i) => ({ delivery: delivery(i), handled: h }));

describe('a backfill step\'s page', () => {
  it('passes handled deliveries and up to the budget of the others, stopping before the first beyond it', () => {
    const ids = (c: BackfillCandidate[]) => c.map((x) => x.delivery.receivedAt - 1_000);
    expect(ids(takeFromPage(page([false, true, false, false, true]), 2))).toEqual([0, 1, 2]);
    expect(ids(takeFromPage(page([true, true, false]), 0))).toEqual([0, 1]);
    expect(ids(takeFromPage(page([false, true]), 5))).toEqual([0, 1]);
  });

  it('runs the backfill\'s handler alone: others without a row are marked succeeded, a row kept', () => {
    // Processed at its first attempt: no rows, the others ran as often as the delivery was attempted.
    expect(ledgerMarks(delivery(1), 'sync', ['notify', 'sync', 'audit'], [])).toEqual([
      { handler: 'sync', status: 'queued', attempts: 0 },
      { handler: 'notify', status: 'succeeded', attempts: 1 },
      { handler: 'audit', status: 'succeeded', attempts: 1 },
    ]);
    // Ignored (never dispatched): the others never ran, so their mark says 0 attempts.
    expect(ledgerMarks(delivery(2, { status: 'ignored', attempts: 0 }), 'sync', ['sync', 'notify'], [])).toEqual([
      { handler: 'sync', status: 'queued', attempts: 0 },
      { handler: 'notify', status: 'succeeded', attempts: 0 },
    ]);
    // Retried: rows are kept; the backfill's handler goes on from its own count.
    const rows = [
      { eventId: 'x', handler: 'notify', status: 'succeeded' as const, attempts: 3, lastError: null },
      { eventId: 'x', handler: 'sync', status: 'failed' as const, attempts: 1, lastError: 'boom' },
    ];
    expect(ledgerMarks(delivery(3, { attempts: 3 }), 'sync', ['notify', 'sync', 'audit'], rows)).toEqual([
      { handler: 'sync', status: 'queued', attempts: 1 },
      { handler: 'audit', status: 'succeeded', attempts: 0 },
    ]);
  });

  it('plans the step: what to run with its ordered rows, how many passed, the cursor', () => {
    const plan = planPage({
      candidates: page([true, false, false, false]),
      budget: 2,
      handler: 'sync',
      handlersFor: () => ['sync'],
      ledger: [],
      orderOf: (d) => (d.receivedAt === 1_001 ? [{ handler: 'sync', key: 'pod-1', at: 5 }] : undefined),
    });
    expect(plan.passed).toBe(3);
    expect(plan.cursor).toEqual({ receivedAt: 1_002, eventId: delivery(2).eventId });
    expect(plan.deliveries).toEqual([
      { eventId: delivery(1).eventId, runs: [{ handler: 'sync', status: 'queued', attempts: 0 }], order: [{ handler: 'sync', key: 'pod-1', at: 5 }] },
      { eventId: delivery(2).eventId, runs: [{ handler: 'sync', status: 'queued', attempts: 0 }] },
    ]);
  });
});
