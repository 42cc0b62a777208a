import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { NewDelivery } from '../../src/core/delivery-store.js';
import { storeRunner, type StoreUnderTest } from './store-contract.js';

/**
 * ctx.waitForEvent's waits in the store (`event_waits`), on every backend: a wait recorded only
 * under its delivery's claim (again: the same wait, its wake consumed), the stored deliveries a
 * wait looks through, a new delivery's wake (recorded once, the waiting delivery due now only
 * while it is parked), the wake of a run that parked while woken, and what is shown and counted.
 */
export function describeWaitContract(name: string, open: () => Promise<StoreUnderTest>, newDelivery: (o?: Partial<NewDelivery>) => NewDelivery) {
  const withStore = storeRunner(open);
  const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

  describe(`wait contract: ${name}`, () => {
    /** A pod.renewal_failed leased by `claim`, as a run that is about to wait holds it. */
    async function leased(store: StoreUnderTest['store'], claim: string) {
      const d = newDelivery({ eventType: 'pod.renewal_failed' });
      await store.claim([{ ...d, lease: { owner: claim, claimId: claim, until: d.receivedAt + 60_000 } }]);
      const pod = randomUUID();
      const wait = { eventId: d.eventId, handler: 'awaitRenewal', seq: 1, name: 'renewed', podId: pod, types: ['pod.renewed'], afterAt: d.receivedAt, untilAt: d.receivedAt + 1_800_000, createdAt: d.receivedAt + 5 };
      return { d, pod, wait };
    }
    /** Its run parks: the outcome written under the claim, due at the wait's timeout. */
    const park = (store: StoreUnderTest['store'], d: NewDelivery, claim: string, until: number) =>
      store.completeDispatch([{ eventId: d.eventId, owner: claim, claimId: claim, status: 'queued', attempts: 0, lastError: null, nextAttemptAt: until, now: d.receivedAt + 10, runs: [] }]);

    it(
      'records a wait only under its delivery’s claim; the same wait again is no new one and clears its wake',
      withStore(async (store) => {
        const claim = `c-${randomUUID()}`;
        const { d, wait } = await leased(store, claim);
        expect(await store.putWait(wait, 'another-claim')).toEqual({ recorded: false, created: false });
        expect(await store.waitsOf([d.eventId])).toEqual([]);
        expect(await store.putWait(wait, claim)).toEqual({ recorded: true, created: true });
        expect(await store.waitsOf([d.eventId])).toEqual([{ ...wait, wokenBy: null }]);
        expect(await store.anyWaits()).toBe(true);
        expect(await store.countWaits()).toBeGreaterThanOrEqual(1);
        expect(await store.wakeWaits([wait], 'woke-it', d.receivedAt + 20)).toEqual([]); // leased: not made due
        expect((await store.waitsOf([d.eventId]))[0]?.wokenBy).toBe('woke-it');
        expect(await store.putWait({ ...wait, createdAt: wait.createdAt + 1_000 }, claim)).toEqual({ recorded: true, created: false });
        expect(await store.waitsOf([d.eventId])).toEqual([{ ...wait, wokenBy: null }]);
        expect(await store.waitsOnPod(wait.podId)).toEqual([{ ...wait, wokenBy: null }]);
        await store.dropWait(d.eventId, 'awaitRenewal', 1);
        expect(await store.waitsOf([d.eventId])).toEqual([]);
      }),
    );

    it(
      'a wait whose delivery is no longer open (dead beside another handler, or its handler changed) is neither counted nor looked up',
      withStore(async (store) => {
        const claim = `c-${randomUUID()}`;
        const { d, wait } = await leased(store, claim);
        await store.putWait(wait, claim);
        const counted = await store.countWaits();
        await store.completeDispatch([{ eventId: d.eventId, owner: claim, claimId: claim, status: 'dead', attempts: 1, lastError: 'other: failed', nextAttemptAt: null, now: d.receivedAt + 10, runs: [] }]);
        expect(await store.countWaits()).toBe(counted - 1);
        expect(await store.waitsOnPod(wait.podId)).toEqual([]);
        expect(await store.waitsOf([d.eventId])).toHaveLength(1); // still shown with its delivery
      }),
    );

    it(
      'looks through stored deliveries of the types received after the waiting one, oldest first, a page at a time, never a quarantined copy',
      withStore(async (store) => {
        const base = newDelivery();
        const after = base.receivedAt;
        const at = (ms: number, eventType: string, body: unknown = { n: randomUUID() }) => newDelivery({ eventType, receivedAt: after + ms, body: json(body) });
        const same = at(0, 'pod.renewed'); // received with the waiting one: not after it
        const wanted = [at(3, 'pod.renewed'), at(1, 'pod.active'), at(2, 'pod.renewed'), at(2, 'pod.active')];
        const other = at(1, 'pod.created');
        await store.claim([same, ...wanted, other]);
        const quarantined = at(4, 'pod.renewed');
        await store.quarantine(quarantined, randomUUID());
        const types = ['pod.renewed', 'pod.active'];
        const all = await store.deliveriesAfter({ types, afterAt: after, limit: 10 });
        const order = [...wanted].sort((a, b) => a.receivedAt - b.receivedAt || (a.eventId < b.eventId ? -1 : 1));
        // Among these and no others (the table may hold other tests' deliveries: D1 keeps one database).
        const ours = all.filter((c) => [same, ...wanted, other, quarantined].some((d) => d.eventId === c.eventId));
        expect(ours.map((c) => c.eventId)).toEqual(order.map((d) => d.eventId));
        expect(ours[0]).toEqual({ eventId: order[0]!.eventId, eventType: order[0]!.eventType, signatureT: order[0]!.signatureT, receivedAt: order[0]!.receivedAt, body: order[0]!.body, traceParent: null });
        const first = await store.deliveriesAfter({ types, afterAt: after, limit: 2 });
        const rest = await store.deliveriesAfter({ types, afterAt: after, limit: 10, from: first.at(-1)! });
        expect([...first, ...rest].map((c) => c.eventId)).toEqual(all.map((c) => c.eventId));
      }),
    );

    it(
      'wakes a parked run once: its wake recorded (the first delivery’s), its delivery due now; a leased one, or one due already, is not touched',
      withStore(async (store) => {
        const claim = `c-${randomUUID()}`;
        const { d, wait } = await leased(store, claim);
        await store.putWait(wait, claim);
        await park(store, d, claim, wait.untilAt);
        const now = d.receivedAt + 100;
        expect(await store.wakeWaits([wait], 'first-match', now)).toEqual([d.eventId]);
        expect(await store.get(d.eventId)).toMatchObject({ status: 'queued', nextAttemptAt: now });
        // Due already: a second wake changes nothing, and the first delivery stays the one that woke it.
        expect(await store.wakeWaits([wait], 'second-match', now + 1)).toEqual([]);
        expect((await store.waitsOf([d.eventId]))[0]?.wokenBy).toBe('first-match');
        expect((await store.get(d.eventId))?.nextAttemptAt).toBe(now);
      }),
    );

    it(
      'wakes many runs waiting on one pod at once (D1 binds at most 100 values a statement)',
      withStore(async (store) => {
        const podId = randomUUID();
        const parked: { eventId: string; handler: string; seq: number }[] = [];
        for (let i = 0; i < 60; i++) {
          const claim = `c-${randomUUID()}`;
          const { d, wait } = await leased(store, claim);
          await store.putWait({ ...wait, podId }, claim);
          await park(store, d, claim, wait.untilAt);
          parked.push(wait);
        }
        const now = Math.max(...(await Promise.all(parked.map(async (p) => (await store.get(p.eventId))!.receivedAt)))) + 100;
        expect((await store.wakeWaits(await store.waitsOnPod(podId), 'match', now)).sort()).toEqual(parked.map((p) => p.eventId).sort());
        expect((await store.waitsOf(parked.map((p) => p.eventId))).every((w) => w.wokenBy === 'match')).toBe(true);
      }),
    );

    it(
      'a run that parked while a delivery woke it (it still held the lease) is made due by its outcome’s check; one never woken is not',
      withStore(async (store) => {
        const claim = `c-${randomUUID()}`;
        const { d, wait } = await leased(store, claim);
        await store.putWait(wait, claim);
        const quiet = await leased(store, `q-${claim}`);
        await store.putWait(quiet.wait, `q-${claim}`);
        // Woken while leased: the wake is recorded, the delivery left to its run.
        expect(await store.wakeWaits([wait], 'match', d.receivedAt + 20)).toEqual([]);
        expect(await store.wakeIfWoken(d.eventId, d.receivedAt + 20)).toBe(false); // still leased
        await park(store, d, claim, wait.untilAt);
        await park(store, quiet.d, `q-${claim}`, quiet.wait.untilAt);
        expect(await store.wakeIfWoken(d.eventId, d.receivedAt + 30)).toBe(true);
        expect((await store.get(d.eventId))?.nextAttemptAt).toBe(d.receivedAt + 30);
        expect(await store.wakeIfWoken(quiet.d.eventId, d.receivedAt + 30)).toBe(false);
        expect((await store.get(quiet.d.eventId))?.nextAttemptAt).toBe(quiet.wait.untilAt);
      }),
    );

    it(
      'shows a parked wait with what it waits for; dropping a handler’s steps (replay --fresh) drops its waits',
      withStore(async (store) => {
        const claim = `c-${randomUUID()}`;
        const { d, wait } = await leased(store, claim);
        await store.putWait(wait, claim);
        const step = { eventId: d.eventId, handler: 'awaitRenewal', seq: 1, name: 'renewed', kind: 'wait' as const, state: 'sleeping' as const, attempts: 1, result: null, sensitive: false, resultBytes: null, error: null, wakeAt: wait.untilAt, startedAt: d.receivedAt, finishedAt: null, durationMs: null };
        expect(await store.saveStep(step, claim)).toBe(true);
        await park(store, d, claim, wait.untilAt);
        expect(await store.parkedRuns([d.eventId])).toEqual([
          { eventId: d.eventId, handler: 'awaitRenewal', step: 'renewed', wakeAt: wait.untilAt, waitingFor: { types: ['pod.renewed'], podId: wait.podId } },
        ]);
        await store.dropSteps(d.eventId, 'awaitRenewal');
        expect(await store.waitsOf([d.eventId])).toEqual([]);
        expect(await store.parkedRuns([d.eventId])).toEqual([]);
      }),
    );
  });
}
