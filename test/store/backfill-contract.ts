import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BackfillSelection, BackfillStep } from '../../src/core/backfill/backfill-store.js';
import type { DeliveryStore, ImportedDelivery, NewDelivery } from '../../src/core/delivery-store.js';
import type { StoreUnderTest } from './store-contract.js';

/**
 * The store's side of backfills, on every backend: handler registrations (the earliest start
 * kept), which stored deliveries a backfill covers and which its handler already handled, one
 * running backfill per handler, the lease (taken over once it runs out, fenced by its claim), and
 * a page requeued with the backfill's advance in one step, fenced by its claim and step.
 */
export function describeBackfillContract(
  name: string,
  open: () => Promise<StoreUnderTest>,
  newDelivery: (overrides?: Partial<NewDelivery>) => NewDelivery,
) {
  const withStore = (fn: (store: DeliveryStore) => Promise<void>) => async () => {
    const s = await open();
    try {
      await fn(s.store);
    } finally {
      await s.close();
    }
  };
  /** A delivery stored as it was left by an earlier dispatch (import keeps status and times). */
  const stored = (status: ImportedDelivery['status'], overrides: Partial<NewDelivery> & { attempts?: number; processedAt?: number; lastError?: string | null } = {}): ImportedDelivery => {
    const { attempts = status === 'ignored' ? 0 : 1, processedAt, ...rest } = overrides;
    const d = newDelivery(rest);
    return {
      ...d,
      status,
      lastReceivedAt: d.receivedAt,
      deliveryCount: 1,
      attempts,
      nextAttemptAt: status === 'queued' || status === 'failed' ? d.receivedAt : null,
      processedAt: status === 'processed' ? (processedAt ?? d.receivedAt + 10) : null,
    };
  };
  /** Gives a stored delivery ledger rows, as an attempt with failures (or a later one) leaves them. */
  const withRuns = async (store: DeliveryStore, d: ImportedDelivery, runs: { handler: string; status: 'succeeded' | 'failed' | 'skipped'; attempts: number }[], status = d.status) => {
    const owner = `seed-${randomUUID().slice(0, 8)}`;
    await store.leaseEvents({ eventIds: [d.eventId], owner, now: d.receivedAt + 20, leaseMs: 1000 });
    await store.completeDispatch([
      {
        eventId: d.eventId, owner, status: status as 'processed', attempts: d.attempts, lastError: d.lastError, nextAttemptAt: null, now: d.receivedAt + 20,
        runs: runs.map((r) => ({ eventId: d.eventId, ...r, lastError: r.status === 'failed' ? 'Error: boom' : null })),
      },
    ]);
  };

  describe(`backfill contract: ${name}`, () => {
    it(
      'registers handlers: the first start is kept, the last one moves on',
      withStore(async (store) => {
        const h = `h-${randomUUID().slice(0, 8)}`;
        await store.registerHandlers([h, `${h}-b`], 2_000);
        await store.registerHandlers([h], 1_000); // a replica whose start was earlier writes last
        await store.registerHandlers([h], 3_000);
        const rows = (await store.handlerRegistrations()).filter((r) => r.handler.startsWith(h));
        expect(rows).toEqual([
          { handler: h, firstSeenAt: 1_000, lastSeenAt: 3_000 },
          { handler: `${h}-b`, firstSeenAt: 2_000, lastSeenAt: 2_000 },
        ]);
      }),
    );

    it(
      'covers processed and ignored deliveries of its types and range, marks those its handler handled, and counts dead letters apart',
      withStore(async (store) => {
        const H = `mirror-${randomUUID().slice(0, 8)}`;
        const fresh = stored('processed'); // processed at its first attempt, before H ran anywhere: not handled
        const ignored = stored('ignored', { eventType: 'pod.destroyed', lastError: 'no handler for this event type' });
        const ranH = stored('processed');
        const neverRanH = stored('processed'); // a retried delivery whose ledger has no run of H: another replay wrote it 0 attempts
        const deadLetter = stored('dead', { lastError: 'other: Error: boom', attempts: 8 });
        const deadOnArrival = stored('dead', { lastError: 'invalid_json: Unexpected token', attempts: 0 });
        const failed = stored('failed', { lastError: 'other: Error: boom' });
        const queued = stored('queued', { attempts: 0 });
        const otherType = stored('processed', { eventType: 'pod.backup.completed' });
        const firstSeenAt = otherType.receivedAt + 5_000;
        const afterStart = stored('processed', { processedAt: firstSeenAt + 1 }); // ran live with H registered (no ledger row)
        const all = [fresh, ignored, ranH, neverRanH, deadLetter, deadOnArrival, failed, queued, otherType, afterStart];
        expect((await store.importDeliveries(all)).every((r) => r.outcome === 'new')).toBe(true);
        await withRuns(store, ranH, [{ handler: H, status: 'succeeded', attempts: 2 }, { handler: 'other', status: 'succeeded', attempts: 2 }]);
        // A `succeeded` row with no run (attempts 0): what a requeue of another handler writes for one that never ran.
        await withRuns(store, neverRanH, [{ handler: 'other', status: 'succeeded', attempts: 2 }, { handler: H, status: 'succeeded', attempts: 0 }]);

        const selection: BackfillSelection = {
          handler: H,
          types: ['pod.created', 'pod.destroyed'],
          since: fresh.receivedAt,
          until: afterStart.receivedAt + 1,
          firstSeenAt,
        };
        expect(await store.countBackfill(selection)).toEqual({ matching: 5, handled: 2, deadLetters: 1 });
        const page = await store.backfillPage(selection, null, 3);
        expect(page.map((c) => [c.delivery.eventId, c.handled])).toEqual([
          [fresh.eventId, false],
          [ignored.eventId, false],
          [ranH.eventId, true],
        ]);
        const rest = await store.backfillPage(selection, { receivedAt: ranH.receivedAt, eventId: ranH.eventId }, 10);
        expect(rest.map((c) => [c.delivery.eventId, c.handled])).toEqual([
          [neverRanH.eventId, false],
          [afterStart.eventId, true],
        ]);
        // Never seen running: a delivery processed at its first attempt is not known to have run it.
        expect(await store.countBackfill({ ...selection, firstSeenAt: null })).toEqual({ matching: 5, handled: 1, deadLetters: 1 });
        // Narrowed by range and type.
        expect(await store.countBackfill({ ...selection, types: ['pod.destroyed'] })).toEqual({ matching: 1, handled: 0, deadLetters: 0 });
        expect(await store.countBackfill({ ...selection, since: ranH.receivedAt, until: neverRanH.receivedAt })).toMatchObject({ matching: 1 });
        expect(await store.countBackfill({ ...selection, types: [] })).toEqual({ matching: 0, handled: 0, deadLetters: 0 });
      }),
    );

    it(
      'keeps one running backfill per handler; lists newest first; a cancelled one frees the handler',
      withStore(async (store) => {
        const H = `h-${randomUUID().slice(0, 8)}`;
        const first = { id: randomUUID(), handler: H, since: null, until: 5_000, eventType: null, rate: null, total: 3, createdAt: 1_000 };
        expect(await store.createBackfill(first)).toBe(true);
        expect(await store.createBackfill({ ...first, id: randomUUID(), createdAt: 1_001 })).toBe(false);
        expect(await store.createBackfill({ ...first, id: randomUUID(), handler: `${H}-other`, createdAt: 1_002 })).toBe(true);
        expect(await store.getBackfill(first.id)).toMatchObject({ handler: H, state: 'running', until: 5_000, total: 3, requeued: 0, skipped: 0, step: 0, cursor: null, lease: null, recent: [] });
        const cancelled = await store.cancelBackfill(first.id, 2_000);
        expect(cancelled).toMatchObject({ id: first.id, state: 'cancelled', finishedAt: 2_000 });
        expect(await store.cancelBackfill(first.id, 2_001)).toBeNull();
        const second = { ...first, id: randomUUID(), createdAt: 3_000 };
        expect(await store.createBackfill(second)).toBe(true);
        const listed = (await store.listBackfills()).filter((b) => b.handler.startsWith(H));
        expect(listed.map((b) => [b.id, b.state])).toEqual([[second.id, 'running'], [expect.any(String), 'running'], [first.id, 'cancelled']]);
        expect((await store.listBackfills({ state: 'cancelled' })).map((b) => b.id)).toContain(first.id);
      }),
    );

    it(
      'requeues a page with the advance in one step, fenced by claim and step; a takeover after the lease runs out refuses the old claim',
      withStore(async (store) => {
        const H = `sync-${randomUUID().slice(0, 8)}`;
        const a = stored('processed', { attempts: 1 }); // first attempt, no ledger: `notify` ran once
        const b = stored('ignored', { eventType: 'pod.destroyed' });
        const held = stored('processed'); // a replay holds it at that moment
        const c = stored('processed');
        await store.importDeliveries([a, b, held, c]);
        await withRuns(store, c, [{ handler: 'notify', status: 'failed', attempts: 1 }, { handler: H, status: 'failed', attempts: 1 }]);
        await store.leaseEvents({ eventIds: [c.eventId], owner: 'x', now: c.receivedAt + 40, leaseMs: 1 });
        await store.completeDispatch([
          { eventId: c.eventId, owner: 'x', status: 'processed', attempts: 2, lastError: null, nextAttemptAt: null, now: c.receivedAt + 40,
            runs: [{ eventId: c.eventId, handler: 'notify', status: 'succeeded', attempts: 2, lastError: null }] },
        ]);
        const id = randomUUID();
        await store.createBackfill({ id, handler: H, since: null, until: null, eventType: null, rate: null, total: 0, createdAt: 100 });
        const now = c.receivedAt + 1_000;
        const claimed = await store.claimBackfill({ id, owner: 'r1', claimId: 'r1.1', now, leaseMs: 500 });
        expect(claimed).toMatchObject({ id, lease: { owner: 'r1', claimId: 'r1.1', until: now + 500 } });
        expect(await store.claimBackfill({ id, owner: 'r2', claimId: 'r2.1', now: now + 1, leaseMs: 500 })).toBeNull();
        // Its holder may take it again under a new claim (a step of its own that threw after claiming it).
        expect(await store.claimBackfill({ id, owner: 'r1', claimId: 'r1.2', now: now + 2, leaseMs: 500 })).toMatchObject({ lease: { owner: 'r1', claimId: 'r1.2' } });
        expect(await store.claimBackfill({ id, owner: 'r1', claimId: 'r1.1', now, leaseMs: 500 })).toMatchObject({ lease: { claimId: 'r1.1', until: now + 500 } });
        expect(await store.resolveBackfill({ id, claimId: 'r2.1', until: 9, total: 9, now })).toBe(false);
        expect(await store.resolveBackfill({ id, claimId: 'r1.1', until: c.receivedAt + 1, total: 4, now })).toBe(true);
        expect(await store.resolveBackfill({ id, claimId: 'r1.1', until: 1, total: 1, now })).toBe(false); // resolved once
        await store.leaseEvents({ eventIds: [held.eventId], owner: 'replay', now, leaseMs: 60_000 });

        const step = (over: Partial<BackfillStep>): BackfillStep => ({
          backfill: { id, claimId: 'r1.1', step: 0 },
          now: now + 10,
          leaseMs: 500,
          deliveries: [
            { eventId: a.eventId, runs: [{ handler: H, status: 'queued', attempts: 0 }, { handler: 'notify', status: 'succeeded', attempts: 1 }], order: [{ handler: H, key: 'pod-1', at: 42 }] },
            { eventId: b.eventId, runs: [{ handler: H, status: 'queued', attempts: 0 }] },
            { eventId: held.eventId, runs: [{ handler: H, status: 'queued', attempts: 0 }] },
          ],
          passed: 3,
          cursor: { receivedAt: held.receivedAt, eventId: held.eventId },
          recent: [[now + 10, 3]],
          ...over,
        });
        // Another claim writes nothing.
        expect(await store.requeueForBackfill(step({ backfill: { id, claimId: 'r2.1', step: 0 } }))).toEqual({ advanced: false, requeued: 0 });
        expect((await store.get(a.eventId))!.status).toBe('processed');
        expect(await store.handlerRuns([a.eventId])).toEqual([]);

        expect(await store.requeueForBackfill(step({}))).toEqual({ advanced: true, requeued: 2 });
        expect(await store.get(a.eventId)).toMatchObject({ status: 'queued', nextAttemptAt: now + 10 });
        expect(await store.get(b.eventId)).toMatchObject({ status: 'queued', nextAttemptAt: now + 10 });
        expect((await store.get(held.eventId))!.status).toBe('processed');
        expect(await store.handlerRuns([held.eventId])).toEqual([]);
        expect((await store.handlerRuns([a.eventId])).map((r) => [r.handler, r.status, r.attempts]).sort()).toEqual([[H, 'queued', 0], ['notify', 'succeeded', 1]].sort());
        expect((await store.orderWaits([a.eventId])).map((w) => [w.handler, w.key])).toEqual([[H, 'pod-1']]);
        expect(await store.getBackfill(id)).toMatchObject({
          step: 1, requeued: 2, skipped: 1, cursor: { receivedAt: held.receivedAt, eventId: held.eventId }, recent: [[now + 10, 3]],
          lease: { claimId: 'r1.1', until: now + 510 },
        });
        // The same page again (a retry that did not see its answer): the step moved on, nothing is written twice.
        expect(await store.requeueForBackfill(step({}))).toEqual({ advanced: false, requeued: 0 });
        // The dispatcher leases what was requeued.
        const due = await store.leaseDue({ owner: 'd', now: now + 11, leaseMs: 1000, limit: 10 });
        expect(due.map((d) => d.eventId).sort()).toEqual([a.eventId, b.eventId].sort());

        // A handler with a row keeps it: `notify` succeeded (2 attempts), H failed once and is queued to run again.
        const cStep: BackfillStep = {
          backfill: { id, claimId: 'r1.1', step: 1 }, now: now + 20, leaseMs: 500, passed: 1, cursor: { receivedAt: c.receivedAt, eventId: c.eventId }, recent: [],
          deliveries: [{ eventId: c.eventId, runs: [{ handler: H, status: 'queued', attempts: 1 }, { handler: 'notify', status: 'succeeded', attempts: 0 }] }],
        };
        // The lease ran out: another replica takes it over; the first's page is refused.
        expect(await store.renewBackfill({ id, claimId: 'r1.1', until: now + 600 })).toBe(true);
        const taken = await store.claimBackfill({ id, owner: 'r2', claimId: 'r2.1', now: now + 601, leaseMs: 500 });
        expect(taken).toMatchObject({ step: 1, cursor: { eventId: held.eventId }, lease: { owner: 'r2' } });
        expect(await store.renewBackfill({ id, claimId: 'r1.1', until: now + 700 })).toBe(false);
        expect(await store.requeueForBackfill(cStep)).toEqual({ advanced: false, requeued: 0 });
        expect(await store.requeueForBackfill({ ...cStep, backfill: { id, claimId: 'r2.1', step: 1 } })).toEqual({ advanced: true, requeued: 1 });
        expect((await store.handlerRuns([c.eventId])).map((r) => [r.handler, r.status, r.attempts]).sort()).toEqual([[H, 'queued', 1], ['notify', 'succeeded', 2]].sort());

        expect(await store.finishBackfill({ id, claimId: 'r1.1', now: now + 700, state: 'done' })).toBe(false);
        expect(await store.finishBackfill({ id, claimId: 'r2.1', now: now + 700, state: 'done' })).toBe(true);
        expect(await store.getBackfill(id)).toMatchObject({ state: 'done', total: 4, requeued: 3, skipped: 1, finishedAt: now + 700, lease: null });
        expect(await store.claimBackfill({ id, owner: 'r3', claimId: 'r3.1', now: now + 800, leaseMs: 500 })).toBeNull();
      }),
    );
  });
}
