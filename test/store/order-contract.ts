import { describe, expect, it } from 'vitest';
import type { DeliveryStore, DispatchOutcome, NewDelivery, OrderFinish } from '../../src/core/delivery-store.js';
import type { StoreUnderTest } from './store-contract.js';

const HOLD = 100;
let seq = 0;

/**
 * The store's side of ordered handlers (`order`), on every backend: rows made with the claim, the
 * key's lock (earliest pending first, one holder at a time, held while its lease lives), the
 * settling of a row by an outcome (fenced by its claim), the wake of the key's next delivery, the
 * stale guard's newest event, what a delivery waits on, and the counts.
 */
export function describeOrderContract(
  name: string,
  open: () => Promise<StoreUnderTest>,
  newDelivery: (overrides?: Partial<NewDelivery>) => NewDelivery,
) {
  // A handler name of its own per test: a backend may keep one database for a whole file (D1).
  let H = 'syncPod';
  const withStore = (fn: (store: DeliveryStore) => Promise<void>) => async () => {
    H = `syncPod-${crypto.randomUUID().slice(0, 8)}`;
    const s = await open();
    try {
      await fn(s.store);
    } finally {
      await s.close();
    }
  };
  /** A delivery of pod `key` that happened at `at`, stored with its ordered row. */
  const ordered = (key: string, at: number, receivedAt: number) => newDelivery({ receivedAt, order: [{ handler: H, key, at }] });
  const lease = async (store: DeliveryStore, d: NewDelivery, owner: string, now: number) => {
    const claimId = `${owner}.${++seq}`;
    const [leased] = await store.leaseEvents({ eventIds: [d.eventId], owner, claimId, now, leaseMs: 60_000 });
    expect(leased, `${d.eventId} leased`).toBeDefined();
    return claimId;
  };
  const start = (store: DeliveryStore, d: NewDelivery, key: string, at: number, now: number) =>
    store.startOrdered({ eventId: d.eventId, receivedAt: d.receivedAt, now, starts: [{ handler: H, key, at }] }).then((r) => r[0]!);
  const settle = (store: DeliveryStore, d: NewDelivery, owner: string, claimId: string, now: number, finish: Omit<OrderFinish, 'handler' | 'holdMs'>, status: DispatchOutcome['status'] = 'processed') =>
    store.completeDispatch([
      {
        eventId: d.eventId, owner, claimId, status, attempts: 1, lastError: null, now,
        nextAttemptAt: status === 'queued' ? now + 60_000 : status === 'failed' ? now + 1 : null,
        runs: [], order: [{ handler: H, holdMs: HOLD, ...finish }],
      },
    ]);

  describe(`order contract: ${name}`, () => {
    it(
      'runs a key one delivery at a time, earliest event first; the next is woken when one settles, and a late older one is stale',
      withStore(async (store) => {
        const t = Date.now() - 10_000;
        const late = ordered('pod-1', 3_000, t + 2); // the latest event, received first
        const early = ordered('pod-1', 1_000, t + 3);
        const middle = ordered('pod-1', 2_000, t + 1);
        const other = ordered('pod-2', 9_000, t + 4);
        await store.claim([late, early, middle, other]);
        const now = t + 1_000;
        const claims = new Map<string, string>();
        for (const d of [late, early, middle, other]) claims.set(d.eventId, await lease(store, d, 'a', now));

        // Only the earliest pending event of pod-1 may start; pod-2 is not held up.
        expect(await start(store, late, 'pod-1', 3_000, now)).toEqual({ handler: H, started: false, waitingOn: early.eventId });
        expect(await start(store, middle, 'pod-1', 2_000, now)).toEqual({ handler: H, started: false, waitingOn: early.eventId });
        expect(await start(store, early, 'pod-1', 1_000, now)).toEqual({ handler: H, started: true, newest: null });
        expect(await start(store, other, 'pod-2', 9_000, now)).toEqual({ handler: H, started: true, newest: null });
        // Asking again while it runs: the same delivery holds the key (a re-run after a takeover may).
        expect(await start(store, early, 'pod-1', 1_000, now)).toMatchObject({ started: true });
        expect((await store.orderWaits([late.eventId, middle.eventId])).map((w) => [w.eventId, w.waitingOn])).toEqual(
          expect.arrayContaining([[late.eventId, early.eventId], [middle.eventId, early.eventId]]),
        );
        expect((await store.orderStats()).filter((r) => r.handler === H)).toEqual([{ handler: H, waiting: 4, oldestReceivedAt: t + 1 }]);

        // `middle` waits with its recheck far off; `early` settling makes it due at once.
        await store.completeDispatch([
          { eventId: middle.eventId, owner: 'a', claimId: claims.get(middle.eventId), status: 'queued', attempts: 0, lastError: null, nextAttemptAt: now + 60_000, now, runs: [],
            order: [{ handler: H, key: 'pod-1', at: 2_000, state: 'waiting', holdMs: HOLD }] },
        ]);
        expect(await store.leaseDue({ owner: 'b', now: now + 1, leaseMs: 1000, limit: 10 })).toEqual([]);
        expect(await settle(store, early, 'a', claims.get(early.eventId)!, now + 2, { key: 'pod-1', at: 1_000, state: 'done' })).toEqual([early.eventId]);
        const woken = await store.leaseDue({ owner: 'b', claimId: 'b.1', now: now + 2, leaseMs: 60_000, limit: 10 });
        expect(woken.map((d) => d.eventId)).toEqual([middle.eventId]);
        expect(await start(store, middle, 'pod-1', 2_000, now + 3)).toEqual({ handler: H, started: true, newest: { eventId: early.eventId, at: 1_000 } });
        expect(await settle(store, middle, 'b', 'b.1', now + 4, { key: 'pod-1', at: 2_000, state: 'done' })).toEqual([middle.eventId]);

        // An event older than the newest that ran arrives late: it may start, and is told of the newer one.
        const stale = ordered('pod-1', 1_500, now + 5);
        await store.claim([stale]);
        const staleClaim = await lease(store, stale, 'c', now + 200);
        expect(await start(store, stale, 'pod-1', 1_500, now + 200)).toEqual({ handler: H, started: true, newest: { eventId: middle.eventId, at: 2_000 } });
        expect(await settle(store, stale, 'c', staleClaim, now + 201, { key: 'pod-1', at: 1_500, state: 'skipped' })).toEqual([stale.eventId]);
        // Skipped: the newest stays `middle`; `late` is next.
        expect(await start(store, late, 'pod-1', 3_000, now + 302)).toEqual({ handler: H, started: true, newest: { eventId: middle.eventId, at: 2_000 } });
        // A failed run keeps its place: the key is given back, the row stays pending, nothing is woken past it.
        expect(await settle(store, late, 'a', claims.get(late.eventId)!, now + 303, { key: 'pod-1', at: 3_000, state: 'released' }, 'failed')).toEqual([late.eventId]);
        expect((await store.orderWaits([late.eventId]))[0]).toMatchObject({ key: 'pod-1', waitingOn: null });
      }),
    );

    it(
      'a holder keeps the key while its lease lives, even from an earlier event that arrives; once its lease runs out the key is free',
      withStore(async (store) => {
        const t = Date.now() - 10_000;
        const first = ordered('pod-9', 5_000, t);
        await store.claim([first]);
        const now = t + 1_000;
        await store.leaseEvents({ eventIds: [first.eventId], owner: 'a', claimId: 'a.1', now, leaseMs: 500 });
        expect(await start(store, first, 'pod-9', 5_000, now)).toMatchObject({ started: true });
        const earlier = ordered('pod-9', 4_000, t + 100);
        await store.claim([earlier]);
        await store.leaseEvents({ eventIds: [earlier.eventId], owner: 'b', claimId: 'b.1', now, leaseMs: 60_000 });
        expect(await start(store, earlier, 'pod-9', 4_000, now + 10)).toEqual({ handler: H, started: false, waitingOn: first.eventId });
        // a's lease ran out (it died mid-run): the earliest pending event takes the key.
        expect(await start(store, earlier, 'pod-9', 4_000, now + 600)).toEqual({ handler: H, started: true, newest: null });
        // a's late outcome is fenced once another claim holds its delivery: it settles nothing.
        await store.leaseEvents({ eventIds: [first.eventId], owner: 'c', claimId: 'c.1', now: now + 601, leaseMs: 60_000 });
        expect(await settle(store, first, 'a', 'a.1', now + 602, { key: 'pod-9', at: 5_000, state: 'done' })).toEqual([]);
        expect(await start(store, first, 'pod-9', 5_000, now + 603)).toEqual({ handler: H, started: false, waitingOn: earlier.eventId });
      }),
    );

    it(
      'a delivery that goes dead frees its key; rows a delivery stored without are made when it first asks; prune removes rows with their delivery',
      withStore(async (store) => {
        const t = Date.now() - 100_000;
        const failing = ordered('pod-3', 1_000, t);
        const next = ordered('pod-3', 2_000, t + 1);
        const bare = newDelivery({ receivedAt: t + 2 }); // stored before the handler was ordered: no row
        await store.claim([failing, next, bare]);
        const now = t + 1_000;
        const claim = await lease(store, failing, 'a', now);
        expect(await start(store, failing, 'pod-3', 1_000, now)).toMatchObject({ started: true });
        const bareClaim = await lease(store, bare, 'a', now);
        expect(await start(store, bare, 'pod-3', 1_500, now)).toEqual({ handler: H, started: false, waitingOn: failing.eventId });
        expect((await store.orderWaits([bare.eventId]))[0]).toMatchObject({ handler: H, key: 'pod-3', waitingOn: failing.eventId });
        expect(await settle(store, failing, 'a', claim, now + 1, { key: 'pod-3', at: 1_000, state: 'dead' }, 'dead')).toEqual([failing.eventId]);
        expect(await start(store, bare, 'pod-3', 1_500, now + 2)).toEqual({ handler: H, started: true, newest: null });
        expect(await start(store, next, 'pod-3', 2_000, now + 2)).toEqual({ handler: H, started: false, waitingOn: bare.eventId });
        expect(await settle(store, bare, 'a', bareClaim, now + 3, { key: 'pod-3', at: 1_500, state: 'done' })).toEqual([bare.eventId]);
        expect(await store.prune({ before: now + 10, limit: 100 })).toBe(1);
        expect(await store.orderWaits([bare.eventId])).toEqual([]);
        expect((await store.orderStats()).filter((r) => r.handler === H)).toEqual([{ handler: H, waiting: 1, oldestReceivedAt: t + 1 }]);
      }),
    );
  });
}
