// The receiver's side of a wait (createEventWaits) on a real SQLite file: the early look that
// covers another process's stale "any wait" flag, the timeout, and a new delivery's wake, each
// with the clock where the test puts it.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPodLocator } from '../../src/core/pods/pod-locator.js';
import { createEventWaits } from '../../src/core/waits/index.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { newDelivery } from '../store/store-contract.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('podhook-event-waits-');
const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((c) => c()));

function setup() {
  const opened = openSqliteStore(dbIn(tempDir()));
  closers.push(() => opened.close());
  let now = 1_800_000_000_000;
  const woken: number[] = [];
  const waits = createEventWaits({
    store: opened.store,
    locator: createPodLocator({ orderFields: { podId: 'pod.id', occurredAt: null } }),
    clock: () => now,
    refreshMs: 1_000,
    onWoken: (n) => void woken.push(n),
  });
  const body = (pod: string) => new TextEncoder().encode(JSON.stringify({ pod: { id: pod } }));
  /** A pod.renewal_failed leased by `claim`, received now, and the wait its run asks for. */
  const waiting = async (pod: string, claim = `c-${randomUUID()}`) => {
    const d = newDelivery({ eventType: 'pod.renewal_failed', receivedAt: now, body: body(pod) });
    await opened.store.claim([{ ...d, lease: { owner: claim, claimId: claim, until: now + 60_000 } }]);
    return { d, claim, ask: { eventId: d.eventId, handler: 'awaitRenewal', seq: 1, name: 'renewed', podId: pod, types: ['pod.renewed'], afterAt: d.receivedAt, untilAt: d.receivedAt + 1_800_000 } };
  };
  /** A pod.renewed about `pod`, received and stored now (as ingest stores it: `payload` parsed). */
  const renewed = async (pod: string) => {
    const d = newDelivery({ eventType: 'pod.renewed', receivedAt: now, body: body(pod), payload: { pod: { id: pod } } });
    await opened.store.claim([d]);
    return d;
  };
  return { store: opened.store, waits, waiting, renewed, woken, at: (ms: number) => void (now = ms), now: () => now };
}

describe('createEventWaits on SQLite', () => {
  it("a new wait parks only until its early look (two refresh periods): a match another process stored meanwhile, unseen by its stale flag, is found then", async () => {
    const t = setup();
    const pod = randomUUID();
    const { ask, claim } = await t.waiting(pod);
    t.at(t.now() + 10);
    expect(await t.waits.check(ask, claim)).toEqual({ parkUntil: t.now() + 2_000 });
    // Stored by a process whose flag said no run waits: no wake.
    t.at(t.now() + 500);
    const match = await t.renewed(pod);
    t.at(t.now() + 1_500);
    expect(await t.waits.check(ask, claim)).toMatchObject({ matched: { id: match.eventId, type: 'pod.renewed', receivedAt: match.receivedAt, payload: { pod: { id: pod } } } });
    expect(await t.store.waitsOf([ask.eventId])).toEqual([]);
  });

  it('a wait looked at again parks until its timeout, and resolves null at it', async () => {
    const t = setup();
    const { ask, claim } = await t.waiting(randomUUID());
    await t.waits.check(ask, claim);
    t.at(t.now() + 2_000);
    expect(await t.waits.check(ask, claim)).toEqual({ parkUntil: ask.untilAt });
    t.at(ask.untilAt);
    expect(await t.waits.check(ask, claim)).toEqual({ timedOut: true });
    expect(await t.store.waitsOf([ask.eventId])).toEqual([]);
  });

  it('a new delivery wakes the waits on its pod for its type, received after theirs; not another pod, type or an earlier one', async () => {
    const t = setup();
    const pod = randomUUID();
    const { ask, claim, d } = await t.waiting(pod);
    await t.waits.check(ask, claim);
    await t.store.completeDispatch([{ eventId: d.eventId, owner: claim, claimId: claim, status: 'queued', attempts: 0, lastError: null, nextAttemptAt: ask.untilAt, now: t.now(), runs: [] }]);
    t.at(t.now() + 100);
    const other = await t.renewed(randomUUID());
    expect(t.waits.mayWake(other)).toBe(true); // a run waits: the whole check
    await t.waits.afterStored(other);
    expect(t.woken).toEqual([]);
    const match = await t.renewed(pod);
    await t.waits.afterStored(match);
    expect(t.woken).toEqual([1]);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'queued', nextAttemptAt: t.now() });
    expect((await t.store.waitsOf([d.eventId]))[0]?.wokenBy).toBe(match.eventId);
  });

  it("a match that wakes a run still holding its lease is left to the run's outcome: once parked, its outcome's check makes it due", async () => {
    const t = setup();
    const pod = randomUUID();
    const { ask, claim, d } = await t.waiting(pod);
    await t.waits.check(ask, claim);
    t.at(t.now() + 100);
    // The run has looked and is about to park: still leased when the match arrives.
    const match = await t.renewed(pod);
    await t.waits.afterStored(match);
    expect(t.woken).toEqual([]);
    await t.store.completeDispatch([{ eventId: d.eventId, owner: claim, claimId: claim, status: 'queued', attempts: 0, lastError: null, nextAttemptAt: t.now() + 2_000, now: t.now(), runs: [] }]);
    t.waits.subscriber.deliveryFinished!('pod.renewal_failed', 'queued', { eventId: d.eventId, attempt: 0, failures: [] });
    await vi.waitFor(() => expect(t.woken).toEqual([1]));
    expect((await t.store.get(d.eventId))?.nextAttemptAt).toBe(t.now());
  });
});
