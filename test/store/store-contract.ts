import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DeliveryStore, ImportedDelivery, NewDelivery } from '../../src/core/delivery-store.js';
import { describeBackfillContract } from './backfill-contract.js';
import { describeOrderContract } from './order-contract.js';
import { describeRateBucketContract } from './rate-bucket-contract.js';
import { describeWaitContract } from './wait-contract.js';

export interface StoreUnderTest {
  store: DeliveryStore;
  close(): Promise<void> | void;
}

let clockMs = 1_790_000_000_000;

export function newDelivery(overrides: Partial<NewDelivery> = {}): NewDelivery {
  clockMs += 1000;
  return {
    eventId: randomUUID(),
    eventType: 'pod.created',
    signatureT: Math.floor(clockMs / 1000),
    contentDigest: randomBytes(32),
    body: new TextEncoder().encode(JSON.stringify({ n: clockMs })),
    headers: { 'content-type': 'application/json', 'x-svc-event-type': 'pod.created' },
    receivedAt: clockMs,
    status: 'queued',
    lastError: null,
    ...overrides,
  };
}

/**
 * A replay of signed content carries the same `t` and digest (the digest covers `<t>.<body>`);
 * fixtures that share a digest must share `signatureT` too.
 *
 * One battery of store tests, run against every backend (better-sqlite3 here, D1 in workerd):
 * the `batteryOfTests(storageFactory)` pattern of Shopify's session storages.
 */
export function describeStoreContract(name: string, open: () => Promise<StoreUnderTest>) {
  describe(`store contract: ${name}`, () => {
    const withStore = storeRunner(open);

    it(
      'stores a new delivery byte-exact, with its headers and status',
      withStore(async (store) => {
        const body = new Uint8Array([0x7b, 0xff, 0x00, 0xfe, 0x7d]);
        const d = newDelivery({ body });
        expect(await store.claim([d])).toEqual([{ outcome: 'new' }]);
        const row = await store.get(d.eventId);
        expect(row).toMatchObject({
          eventId: d.eventId,
          eventType: 'pod.created',
          signatureT: d.signatureT,
          receivedAt: d.receivedAt,
          lastReceivedAt: d.receivedAt,
          deliveryCount: 1,
          status: 'queued',
          attempts: 0,
          lastError: null,
          nextAttemptAt: d.receivedAt,
          headers: d.headers,
        });
        expect(row!.body).toBeInstanceOf(Uint8Array);
        expect(Array.from(row!.body)).toEqual(Array.from(body));
      }),
    );

    it(
      "keeps a delivery's trace context (W3C traceparent) with its row, read back on get and on lease; none when it came without",
      withStore(async (store) => {
        const traceParent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
        const traced = newDelivery({ traceParent });
        const untraced = newDelivery();
        expect(await store.claim([traced, untraced])).toEqual([{ outcome: 'new' }, { outcome: 'new' }]);
        expect((await store.get(traced.eventId))?.traceParent).toBe(traceParent);
        expect((await store.get(untraced.eventId))?.traceParent).toBeNull();
        const leased = await store.leaseDue({ owner: 'tracer', now: untraced.receivedAt, leaseMs: 10_000, limit: 10 });
        expect(Object.fromEntries(leased.map((d) => [d.eventId, d.traceParent]))).toEqual({ [traced.eventId]: traceParent, [untraced.eventId]: null });
      }),
    );

    it(
      'counts a duplicate of a stored id and keeps the first copy',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        const retry = newDelivery({ eventId: d.eventId, signatureT: d.signatureT + 60, body: d.body });
        expect(await store.claim([retry])).toEqual([{ outcome: 'duplicate', deliveryCount: 2 }]);
        expect(await store.claim([retry])).toEqual([{ outcome: 'duplicate', deliveryCount: 3 }]);
        const row = await store.get(d.eventId);
        expect(row).toMatchObject({ deliveryCount: 3, receivedAt: d.receivedAt, lastReceivedAt: retry.receivedAt, signatureT: d.signatureT });
      }),
    );

    it(
      'reports a conflict for signed content stored under another id, and stores nothing',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        const replay = newDelivery({ signatureT: d.signatureT, contentDigest: d.contentDigest, body: d.body });
        expect(await store.claim([replay])).toEqual([{ outcome: 'conflict' }]);
        expect(await store.get(replay.eventId)).toBeNull();
        expect((await store.get(d.eventId))!.deliveryCount).toBe(1);
      }),
    );

    it(
      'reports a conflict for a stored id under another type, and counts nothing',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        expect(await store.claim([newDelivery({ eventId: d.eventId, eventType: 'pod.destroyed' })])).toEqual([
          { outcome: 'conflict' },
        ]);
        expect(await store.get(d.eventId)).toMatchObject({ eventType: 'pod.created', deliveryCount: 1 });
      }),
    );

    it(
      'quarantines signed content stored under another id: its own row, never due, a further copy is a duplicate',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        const replay = newDelivery({ signatureT: d.signatureT, contentDigest: d.contentDigest, body: d.body });
        expect(await store.claim([replay])).toEqual([{ outcome: 'conflict' }]);
        expect(await store.quarantine(replay, randomUUID())).toEqual({
          outcome: 'quarantined',
          eventId: replay.eventId,
          conflictWith: { eventId: d.eventId, eventType: 'pod.created' },
        });
        expect(await store.get(replay.eventId)).toMatchObject({
          eventType: 'pod.created',
          status: 'quarantined',
          conflictWith: d.eventId,
          nextAttemptAt: null,
          deliveryCount: 1,
        });
        expect(await store.claim([replay])).toEqual([{ outcome: 'duplicate', deliveryCount: 2 }]);
        expect((await store.leaseDue({ owner: 'o', now: replay.receivedAt + 1, leaseMs: 1000, limit: 10 })).map((r) => r.eventId)).toEqual([d.eventId]);
        expect((await store.list({ status: 'quarantined' })).map((r) => r.eventId)).toEqual([replay.eventId]);
        expect((await store.get(d.eventId))!.deliveryCount).toBe(1);
      }),
    );

    it(
      'quarantines a stored id under another type as its alternate id; a further copy is a duplicate',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        const other = newDelivery({ eventId: d.eventId, eventType: 'pod.destroyed' });
        const alternate = randomUUID();
        expect(await store.claim([other])).toEqual([{ outcome: 'conflict' }]);
        expect(await store.quarantine(other, alternate)).toEqual({
          outcome: 'quarantined',
          eventId: alternate,
          conflictWith: { eventId: d.eventId, eventType: 'pod.created' },
        });
        expect(await store.get(alternate)).toMatchObject({ eventType: 'pod.destroyed', status: 'quarantined', conflictWith: d.eventId });
        expect(await store.claim([other])).toEqual([{ outcome: 'conflict' }]);
        expect(await store.quarantine(other, alternate)).toEqual({ outcome: 'duplicate', deliveryCount: 2 });
        expect(await store.get(d.eventId)).toMatchObject({ eventType: 'pod.created', deliveryCount: 1, status: 'queued' });
      }),
    );

    it(
      'claims a batch in order: two copies of one id are new then duplicate',
      withStore(async (store) => {
        const d = newDelivery();
        const other = newDelivery();
        const results = await store.claim([d, { ...d }, other]);
        expect(results).toEqual([{ outcome: 'new' }, { outcome: 'duplicate', deliveryCount: 2 }, { outcome: 'new' }]);
      }),
    );

    it(
      'keeps dead and ignored deliveries with their reason and no due time',
      withStore(async (store) => {
        const dead = newDelivery({ status: 'dead', lastError: 'invalid_json: x' });
        const ignored = newDelivery({ eventType: 'pod.unknown', status: 'ignored', lastError: 'unknown event type' });
        await store.claim([dead, ignored]);
        expect(await store.get(dead.eventId)).toMatchObject({ status: 'dead', lastError: 'invalid_json: x', nextAttemptAt: null });
        expect(await store.get(ignored.eventId)).toMatchObject({ status: 'ignored', nextAttemptAt: null });
      }),
    );

    it(
      'lists newest first with status, type, since and limit filters',
      withStore(async (store) => {
        const a = newDelivery();
        const b = newDelivery({ eventType: 'pod.active' });
        const c = newDelivery({ status: 'dead', lastError: 'empty_body' });
        await store.claim([a, b, c]);
        expect((await store.list()).map((d) => d.eventId)).toEqual([c.eventId, b.eventId, a.eventId]);
        expect((await store.list({ status: 'dead' })).map((d) => d.eventId)).toEqual([c.eventId]);
        expect((await store.list({ eventType: 'pod.active' })).map((d) => d.eventId)).toEqual([b.eventId]);
        expect((await store.list({ since: b.receivedAt })).map((d) => d.eventId)).toEqual([c.eventId, b.eventId]);
        expect(await store.list({ limit: 1 })).toHaveLength(1);
      }),
    );

    it(
      'finds an id case-insensitively',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        expect((await store.get(d.eventId.toUpperCase()))?.eventId).toBe(d.eventId);
      }),
    );

    it(
      'keeps secrets: add, list oldest first, refuse a second copy, remove by id or fingerprint',
      withStore(async (store) => {
        const s1 = { id: randomUUID(), webhookId: randomUUID(), url: 'https://example.com/h', eventTypes: ['pod.created'], secret: 's1', fingerprint: 'fp1', createdAt: 1 };
        const s2 = { id: randomUUID(), webhookId: null, url: null, eventTypes: null, secret: 's2', fingerprint: 'fp2', createdAt: 2 };
        expect(await store.addSecret(s2)).toBe(true);
        expect(await store.addSecret(s1)).toBe(true);
        expect(await store.addSecret({ ...s1, id: randomUUID() })).toBe(false);
        expect(await store.listSecrets()).toEqual([s1, s2]);
        expect(await store.removeSecret('fp1')).toBe(1);
        expect(await store.removeSecret(s2.id)).toBe(1);
        expect(await store.removeSecret('nothing')).toBe(0);
        expect(await store.listSecrets()).toEqual([]);
      }),
    );

    it(
      'leases due deliveries once, oldest first, skipping live leases, dead and ignored rows',
      withStore(async (store) => {
        const a = newDelivery();
        const b = newDelivery();
        const dead = newDelivery({ status: 'dead', lastError: 'empty_body' });
        const late = newDelivery({ receivedAt: b.receivedAt + 10 * 60_000 });
        await store.claim([b, a, dead, late].sort(() => 0));
        const now = b.receivedAt + 1;
        const first = await store.leaseDue({ owner: 'one', now, leaseMs: 1000, limit: 10 });
        expect(first.map((d) => d.eventId)).toEqual([a.eventId, b.eventId]);
        expect(await store.leaseDue({ owner: 'two', now, leaseMs: 1000, limit: 10 })).toEqual([]);
        // After the lease runs out, another owner may take them.
        expect((await store.leaseDue({ owner: 'two', now: now + 1001, leaseMs: 1000, limit: 1 })).map((d) => d.eventId)).toEqual([a.eventId]);
      }),
    );

    it(
      'keeps a lease taken with the insert (hand-off): others skip the row until it runs out',
      withStore(async (store) => {
        const free = newDelivery();
        const until = free.receivedAt + 60_000;
        const d = newDelivery({ lease: { owner: 'ingest', claimId: 'ingest.1', until } });
        await store.claim([d, free]);
        const now = d.receivedAt;
        expect((await store.leaseDue({ owner: 'other', now, leaseMs: 120_000, limit: 10 })).map((x) => x.eventId)).toEqual([free.eventId]);
        expect((await store.leaseDue({ owner: 'other', now: until - 1, leaseMs: 1000, limit: 10 })).map((x) => x.eventId)).toEqual([]);
        expect((await store.leaseDue({ owner: 'other', now: until + 1, leaseMs: 1000, limit: 10 })).map((x) => x.eventId)).toEqual([d.eventId]);
      }),
    );

    it(
      'records outcomes and ledger runs atomically, only while the owner holds the lease',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        const now = d.receivedAt + 5;
        await store.leaseDue({ owner: 'me', now, leaseMs: 1000, limit: 1 });
        await store.completeDispatch([
          {
            eventId: d.eventId, owner: 'me', status: 'failed', attempts: 1, lastError: 'h2: boom', nextAttemptAt: now + 500, now,
            runs: [
              { eventId: d.eventId, handler: 'h1', status: 'succeeded', attempts: 1, lastError: null },
              { eventId: d.eventId, handler: 'h2', status: 'failed', attempts: 1, lastError: 'boom' },
            ],
          },
        ]);
        expect(await store.get(d.eventId)).toMatchObject({ status: 'failed', attempts: 1, lastError: 'h2: boom', nextAttemptAt: now + 500 });
        expect(await store.leaseDue({ owner: 'x', now: now + 499, leaseMs: 1000, limit: 1 })).toEqual([]);
        expect(await store.leaseDue({ owner: 'x', now: now + 500, leaseMs: 1000, limit: 1 })).toHaveLength(1);
        // 'me' no longer holds the lease: its late write leaves the delivery alone.
        await store.completeDispatch([{ eventId: d.eventId, owner: 'me', status: 'processed', attempts: 2, lastError: null, nextAttemptAt: null, now, runs: [] }]);
        expect((await store.get(d.eventId))!.status).toBe('failed');
        await store.completeDispatch([
          { eventId: d.eventId, owner: 'x', status: 'processed', attempts: 2, lastError: null, nextAttemptAt: null, now: now + 600,
            runs: [{ eventId: d.eventId, handler: 'h2', status: 'succeeded', attempts: 2, lastError: null }] },
        ]);
        expect(await store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 2, processedAt: now + 600, lastError: null });
        expect((await store.handlerRuns([d.eventId])).map((r) => `${r.handler}:${r.status}:${r.attempts}`).sort()).toEqual(['h1:succeeded:1', 'h2:succeeded:2']);
        expect(await store.queueStats()).toEqual({ queued: 0, failed: 0, dead: 0 });
      }),
    );

    it(
      'keeps every handler run of a retried delivery in order, with the replica that ran it; a fenced outcome adds none; prune takes them',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        let now = d.receivedAt + 5;
        const attempt = async (owner: string, n: number, runs: { handler: string; ok: boolean; outcome?: 'timeout' }[]) => {
          now += 10;
          await store.leaseDue({ owner, claimId: `${owner}.${n}`, now, leaseMs: 5, limit: 1 });
          const failed = runs.some((r) => !r.ok);
          return store.completeDispatch([
            {
              eventId: d.eventId, owner, claimId: `${owner}.${n}`, status: failed ? 'failed' : 'processed', attempts: n,
              lastError: failed ? 'b: Error: no' : null, nextAttemptAt: failed ? now + 1 : null, now, durationMs: 7,
              runs: runs.map((r) => ({
                eventId: d.eventId, handler: r.handler, status: r.ok ? 'succeeded' : 'failed', attempts: n, lastError: r.ok ? null : 'Error: no',
                durationMs: 3, outcome: r.outcome ?? (r.ok ? 'succeeded' : 'failed'),
              })),
            },
          ]);
        };
        await attempt('replica-a', 1, [{ handler: 'a', ok: true }, { handler: 'b', ok: false }]);
        await attempt('replica-b', 2, [{ handler: 'b', ok: false, outcome: 'timeout' }]);
        // A claim that lost the row records nothing, its runs included.
        expect(await store.completeDispatch([
          { eventId: d.eventId, owner: 'gone', claimId: 'gone.1', status: 'processed', attempts: 9, lastError: null, nextAttemptAt: null, now,
            runs: [{ eventId: d.eventId, handler: 'b', status: 'succeeded', attempts: 9, lastError: null, outcome: 'succeeded' }] },
        ])).toEqual([]);
        await attempt('replica-a', 3, [{ handler: 'b', ok: true }]);
        const history = await store.handlerAttempts([d.eventId]);
        expect(history.map((r) => [r.handler, r.attempt, r.outcome, r.error, r.ranBy])).toEqual([
          ['a', 1, 'succeeded', null, 'replica-a'],
          ['b', 1, 'failed', 'Error: no', 'replica-a'],
          ['b', 2, 'timeout', 'Error: no', 'replica-b'],
          ['b', 3, 'succeeded', null, 'replica-a'],
        ]);
        expect(history.every((r) => r.durationMs === 3 && r.at > d.receivedAt)).toBe(true);
        expect(history.map((r) => r.at)).toEqual([...history.map((r) => r.at)].sort((x, y) => x - y));
        expect(await store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 3, ranBy: 'replica-a' });
        expect(await store.handlerAttempts([newDelivery().eventId])).toEqual([]);
        expect(await store.prune({ before: now + 1, limit: 10 })).toBe(1);
        expect(await store.handlerAttempts([d.eventId])).toEqual([]);
      }),
    );

    it(
      'records the earlier runs an outcome or a requeue carries in the history first, as they were, fenced by the claim like its own',
      withStore(async (store) => {
        const d = newDelivery();
        const e = newDelivery();
        await store.claim([d, e]);
        const now = e.receivedAt + 10;
        await store.leaseDue({ owner: 'replica-a', now, leaseMs: 1000, limit: 10 });
        // Both processed at their first attempt: no ledger, no history.
        await store.completeDispatch([d, e].map((x) => ({ eventId: x.eventId, owner: 'replica-a', status: 'processed' as const, attempts: 1, lastError: null, nextAttemptAt: null, now, durationMs: 4, runs: [] })));
        const earlier = (x: typeof d) => [{ eventId: x.eventId, handler: 'a', attempt: 1, outcome: 'succeeded' as const, error: null, durationMs: 4, at: now, ranBy: 'replica-a' }];
        // A replay of d: its lease, then its outcome with the earlier run and its own.
        await store.leaseEvents({ eventIds: [d.eventId], owner: 'replay-b', now: now + 5, leaseMs: 1000 });
        const replayed = { eventId: d.eventId, owner: 'replay-b', status: 'processed' as const, attempts: 2, lastError: null, nextAttemptAt: null, now: now + 6, history: earlier(d),
          runs: [{ eventId: d.eventId, handler: 'a', status: 'succeeded' as const, attempts: 2, lastError: null, durationMs: 2, outcome: 'succeeded' as const }] };
        // Under a claim that does not hold the row: nothing at all.
        expect(await store.completeDispatch([{ ...replayed, claimId: 'stale.1' }])).toEqual([]);
        expect(await store.handlerAttempts([d.eventId])).toEqual([]);
        expect(await store.completeDispatch([replayed])).toEqual([d.eventId]);
        expect((await store.handlerAttempts([d.eventId])).map((r) => [r.handler, r.attempt, r.at, r.ranBy, r.durationMs])).toEqual([
          ['a', 1, now, 'replica-a', 4],
          ['a', 2, now + 6, 'replay-b', 2],
        ]);
        // A requeue of e for the dispatcher records its earlier run with the marks.
        await store.leaseEvents({ eventIds: [e.eventId], owner: 'admin', now: now + 7, leaseMs: 1000 });
        expect(await store.requeue({ owner: 'admin', now: now + 8, deliveries: [{ eventId: e.eventId, runs: [{ handler: 'a', status: 'queued', attempts: 1 }], history: earlier(e) }] })).toBe(1);
        expect((await store.handlerAttempts([e.eventId])).map((r) => [r.handler, r.attempt, r.outcome, r.ranBy])).toEqual([['a', 1, 'succeeded', 'replica-a']]);
      }),
    );

    it(
      'fences by claim id: once another claim holds the row, the old claim neither renews nor records an outcome, even under the same owner',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        const t0 = d.receivedAt + 1;
        expect(await store.leaseDue({ owner: 'a', claimId: 'a.1', now: t0, leaseMs: 1000, limit: 1 })).toHaveLength(1);
        // a.1 renews while it holds the row: nobody may lease it before the new end.
        expect(await store.renewLeases({ leases: [{ eventId: d.eventId, claimId: 'a.1' }], until: t0 + 5000 })).toEqual([d.eventId]);
        expect(await store.leaseDue({ owner: 'b', claimId: 'b.1', now: t0 + 4999, leaseMs: 1000, limit: 1 })).toEqual([]);
        // a.1 was paused past its lease; the same owner leases the row again under a.2 (a restart would too).
        expect(await store.leaseDue({ owner: 'a', claimId: 'a.2', now: t0 + 5001, leaseMs: 1000, limit: 1 })).toHaveLength(1);
        expect(await store.renewLeases({ leases: [{ eventId: d.eventId, claimId: 'a.1' }], until: t0 + 99_000 })).toEqual([]);
        const stale = await store.completeDispatch([
          { eventId: d.eventId, owner: 'a', claimId: 'a.1', status: 'dead', attempts: 9, lastError: 'stale', nextAttemptAt: null, now: t0 + 5002,
            runs: [{ eventId: d.eventId, handler: 'h', status: 'failed', attempts: 9, lastError: 'stale' }] },
        ]);
        expect(stale).toEqual([]);
        expect(await store.get(d.eventId)).toMatchObject({ status: 'queued', attempts: 0, lastError: null });
        expect(await store.handlerRuns([d.eventId])).toEqual([]);
        // The stale renewal did not extend a.2's lease: it still ends at t0 + 6001.
        expect(await store.leaseDue({ owner: 'c', claimId: 'c.1', now: t0 + 6002, leaseMs: 1000, limit: 1 })).toHaveLength(1);
        await store.completeDispatch([
          { eventId: d.eventId, owner: 'a', claimId: 'a.2', status: 'processed', attempts: 1, lastError: null, nextAttemptAt: null, now: t0 + 6003, runs: [] },
        ]);
        expect(await store.get(d.eventId)).toMatchObject({ status: 'queued', attempts: 0 });
        expect(await store.completeDispatch([
          { eventId: d.eventId, owner: 'c', claimId: 'c.1', status: 'processed', attempts: 1, lastError: null, nextAttemptAt: null, now: t0 + 6004, runs: [] },
        ])).toEqual([d.eventId]);
        expect(await store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1, processedAt: t0 + 6004 });
        // A finished row has no claim left to renew.
        expect(await store.renewLeases({ leases: [{ eventId: d.eventId, claimId: 'c.1' }], until: t0 + 99_000 })).toEqual([]);
      }),
    );

    it(
      'renews several leases in one call and answers only the ids its claims still hold',
      withStore(async (store) => {
        const [x, y, z] = [newDelivery(), newDelivery(), newDelivery()];
        z.lease = { owner: 'ingest', claimId: 'ingest.7', until: z.receivedAt + 1000 }; // a hand-off
        await store.claim([x, y, z]);
        const now = Math.max(x.receivedAt, y.receivedAt) + 1;
        expect(await store.leaseDue({ owner: 'a', claimId: 'a.1', now, leaseMs: 1000, limit: 2 })).toHaveLength(2);
        const renewed = await store.renewLeases({
          leases: [{ eventId: x.eventId, claimId: 'a.1' }, { eventId: y.eventId, claimId: 'a.1' }, { eventId: z.eventId, claimId: 'ingest.7' }, { eventId: newDelivery().eventId, claimId: 'a.1' }],
          until: now + 10_000,
        });
        expect(renewed.sort()).toEqual([x.eventId, y.eventId, z.eventId].sort());
        expect(await store.renewLeases({ leases: [], until: now })).toEqual([]);
        expect(await store.leaseDue({ owner: 'b', now: now + 9_999, leaseMs: 1000, limit: 10 })).toEqual([]);
        expect(await store.leaseDue({ owner: 'b', now: now + 10_001, leaseMs: 1000, limit: 10 })).toHaveLength(3);
      }),
    );

    it(
      'gives back every lease of an owner',
      withStore(async (store) => {
        const d = newDelivery();
        await store.claim([d]);
        await store.leaseDue({ owner: 'me', now: d.receivedAt, leaseMs: 60_000, limit: 1 });
        expect(await store.releaseLeases('me')).toBe(1);
        expect(await store.leaseDue({ owner: 'other', now: d.receivedAt, leaseMs: 1000, limit: 1 })).toHaveLength(1);
      }),
    );

    it(
      'prunes old processed and ignored rows with their ledger, in chunks, and keeps dead, queued and recent ones',
      withStore(async (store) => {
        const old = [newDelivery(), newDelivery(), newDelivery({ eventType: 'pod.x', status: 'ignored', lastError: 'unknown' })];
        const oldDead = newDelivery({ status: 'dead', lastError: 'invalid_json' });
        const oldQueued = newDelivery();
        await store.claim([...old, oldDead, oldQueued]);
        for (const d of old.slice(0, 2)) {
          await store.leaseDue({ owner: 'o', now: d.receivedAt, leaseMs: 1000, limit: 1 });
          await store.completeDispatch([{ eventId: d.eventId, owner: 'o', status: 'processed', attempts: 1, lastError: null, nextAttemptAt: null, now: d.receivedAt,
            runs: [{ eventId: d.eventId, handler: 'h', status: 'succeeded', attempts: 1, lastError: null }] }]);
        }
        const recent = newDelivery();
        await store.claim([recent]);
        const before = recent.receivedAt;
        expect(await store.queueStats()).toEqual({ queued: 2, failed: 0, dead: 1 });
        expect(await store.prune({ before, limit: 2 })).toBe(2);
        expect(await store.prune({ before, limit: 2 })).toBe(1);
        expect(await store.prune({ before, limit: 2 })).toBe(0);
        expect(await store.handlerRuns(old.map((d) => d.eventId))).toEqual([]);
        const left = (await store.list()).map((d) => d.eventId).sort();
        expect(left).toEqual([oldDead.eventId, oldQueued.eventId, recent.eventId].sort());
      }),
    );

    it(
      'answers ping',
      withStore(async (store) => {
        await expect(store.ping()).resolves.toBeUndefined();
      }),
    );

    // Export, import and replay (podhook export / import / replay).

    it(
      'scans oldest first in keyset pages, ties on the received time ordered by id, with filters',
      withStore(async (store) => {
        const a = newDelivery();
        const tieIds = [randomUUID(), randomUUID()].sort();
        const tie1 = newDelivery({ eventId: tieIds[1] });
        const tie0 = newDelivery({ eventId: tieIds[0], receivedAt: tie1.receivedAt });
        const dead = newDelivery({ status: 'dead', lastError: 'empty_body', eventType: 'pod.active' });
        await store.claim([dead, tie1, a, tie0]);
        const pages: string[][] = [];
        let after: { receivedAt: number; eventId: string } | undefined;
        for (;;) {
          const page = await store.scan({ limit: 2, after });
          if (page.length === 0) break;
          pages.push(page.map((d) => d.eventId));
          after = page.at(-1)!;
        }
        expect(pages).toEqual([[a.eventId, tie0.eventId], [tie1.eventId, dead.eventId]]);
        expect((await store.scan({ limit: 10, status: 'dead' })).map((d) => d.eventId)).toEqual([dead.eventId]);
        expect((await store.scan({ limit: 10, eventType: 'pod.created', since: tie0.receivedAt })).map((d) => d.eventId)).toEqual([tie0.eventId, tie1.eventId]);
      }),
    );

    it(
      'imports deliveries as exported: status, counts, times and bytes kept, no lease, no ledger',
      withStore(async (store) => {
        const body = new Uint8Array([0x7b, 0xc3, 0x28, 0x00, 0x7d]); // not UTF-8
        const processed = imported(newDelivery({ body }), { status: 'processed', attempts: 2, deliveryCount: 3, processedAt: 1_790_000_500_000 });
        const queued = imported(newDelivery(), {});
        const dead = imported(newDelivery(), { status: 'dead', attempts: 8, lastError: 'h: Error: boom' });
        expect(await store.importDeliveries([processed, queued, dead])).toEqual([{ outcome: 'new' }, { outcome: 'new' }, { outcome: 'new' }]);
        const row = await store.get(processed.eventId);
        expect(row).toMatchObject({
          status: 'processed', attempts: 2, deliveryCount: 3, processedAt: 1_790_000_500_000, nextAttemptAt: null,
          receivedAt: processed.receivedAt, lastReceivedAt: processed.lastReceivedAt, signatureT: processed.signatureT, headers: processed.headers,
        });
        expect(Array.from(row!.body)).toEqual(Array.from(body));
        expect(await store.get(dead.eventId)).toMatchObject({ status: 'dead', attempts: 8, lastError: 'h: Error: boom', nextAttemptAt: null });
        expect(await store.handlerRuns([processed.eventId, dead.eventId])).toEqual([]);
        // Only the queued row is due on the new database.
        const due = await store.leaseDue({ owner: 'o', now: dead.receivedAt + 1, leaseMs: 1000, limit: 10 });
        expect(due.map((d) => d.eventId)).toEqual([queued.eventId]);
      }),
    );

    it(
      'imports an id already stored as a duplicate left untouched, and refuses replayed content or another type',
      withStore(async (store) => {
        const first = newDelivery();
        await store.claim([first]);
        const again = imported(first, { status: 'processed', deliveryCount: 5 });
        const otherType = imported(newDelivery({ eventId: first.eventId, eventType: 'pod.destroyed' }), {});
        const replayed = imported(newDelivery({ signatureT: first.signatureT, contentDigest: first.contentDigest }), {});
        const fresh = imported(newDelivery(), {});
        expect(await store.importDeliveries([again, otherType, replayed, fresh, { ...fresh }])).toEqual([
          { outcome: 'duplicate', deliveryCount: 1 },
          { outcome: 'conflict' },
          { outcome: 'conflict' },
          { outcome: 'new' },
          { outcome: 'duplicate', deliveryCount: 1 },
        ]);
        expect(await store.get(first.eventId)).toMatchObject({ status: 'queued', deliveryCount: 1, eventType: 'pod.created' });
        expect(await store.get(replayed.eventId)).toBeNull();
        expect(await store.importDeliveries([])).toEqual([]);
      }),
    );

    it(
      'leases chosen deliveries whatever their status, unless a live lease holds them',
      withStore(async (store) => {
        const dead = newDelivery({ status: 'dead', lastError: 'x' });
        const busy = newDelivery();
        await store.claim([dead, busy]);
        const now = busy.receivedAt;
        await store.leaseDue({ owner: 'dispatcher', now, leaseMs: 1000, limit: 10 });
        const leased = await store.leaseEvents({ eventIds: [dead.eventId.toUpperCase(), busy.eventId, randomUUID()], owner: 'replay', now, leaseMs: 1000 });
        expect(leased.map((d) => d.eventId)).toEqual([dead.eventId]);
        await store.completeDispatch([{ eventId: dead.eventId, owner: 'replay', status: 'processed', attempts: 1, lastError: null, nextAttemptAt: null, now, runs: [] }]);
        expect(await store.get(dead.eventId)).toMatchObject({ status: 'processed', processedAt: now });
        // Once the dispatcher's lease has run out, a replay may take the row.
        expect(await store.leaseEvents({ eventIds: [busy.eventId], owner: 'replay', now: now + 1001, leaseMs: 1000 })).toHaveLength(1);
      }),
    );

    it(
      'keeps one heartbeat for the receiver and the last downtime until another replaces it',
      withStore(async (store) => {
        expect(await store.readHeartbeat()).toBeNull();
        await store.writeHeartbeat(1000);
        expect(await store.readHeartbeat()).toEqual({ beatAt: 1000, downtime: null });
        await store.writeHeartbeat(900_000, { from: 1000, until: 900_000 });
        await store.writeHeartbeat(930_000);
        expect(await store.readHeartbeat()).toEqual({ beatAt: 930_000, downtime: { from: 1000, until: 900_000 } });
        await store.writeHeartbeat(5_000_000, { from: 930_000, until: 5_000_000 });
        expect(await store.readHeartbeat()).toEqual({ beatAt: 5_000_000, downtime: { from: 930_000, until: 5_000_000 } });
      }),
    );

    it(
      'keeps podhook listen\'s position per remote, replaced on each write',
      withStore(async (store) => {
        const a = 'https://hooks.example.com';
        expect(await store.readListenPosition(a)).toBeNull();
        await store.writeListenPosition(a, { cursor: null, since: 1000 }, 1000);
        expect(await store.readListenPosition(a)).toEqual({ cursor: null, since: 1000 });
        await store.writeListenPosition(a, { cursor: '2000.x', since: 1000 }, 2000);
        await store.writeListenPosition('https://other.example.com/podhook', { cursor: '9.y', since: 5 }, 2000);
        expect(await store.readListenPosition(a)).toEqual({ cursor: '2000.x', since: 1000 });
        expect(await store.readListenPosition('https://other.example.com/podhook')).toEqual({ cursor: '9.y', since: 5 });
      }),
    );
  });
  describeAdminStoreContract(name, open);
  describeOrderContract(name, open, newDelivery);
  describeBackfillContract(name, open, newDelivery);
  describeRateBucketContract(name, open);
  describeWaitContract(name, open, newDelivery);
}

/** Runs a test body on a freshly opened store, closing it afterwards. */
export function storeRunner(open: () => Promise<StoreUnderTest>) {
  return (fn: (store: DeliveryStore) => Promise<void>) => async () => {
    const s = await open();
    try {
      await fn(s.store);
    } finally {
      await s.close();
    }
  };
}

/** An exported delivery as import hands it to the store. */
function imported(d: NewDelivery, overrides: Partial<ImportedDelivery>): ImportedDelivery {
  return {
    ...d,
    lastReceivedAt: d.receivedAt + 500,
    deliveryCount: 1,
    attempts: 0,
    nextAttemptAt: d.status === 'queued' ? d.receivedAt : null,
    processedAt: null,
    ...overrides,
  };
}

/** The admin store methods: newest-first paging, requeue for a replay, and the stats counts. */
export function describeAdminStoreContract(name: string, open: () => Promise<StoreUnderTest>) {
  describe(`admin store contract: ${name}`, () => {
    const withStore = storeRunner(open);

    it(
      'records a delivery\'s payload drift, reads it back, and filters on it (list and scan), a lease keeping it',
      withStore(async (store) => {
        const [fits, drifted, later] = [newDelivery(), newDelivery(), newDelivery()];
        await store.claim([fits!, drifted!, later!]);
        const drift = [{ path: '$.pod.region', kind: 'new_field', message: 'new field: string' }] as const;
        await store.recordDrift(drifted!.eventId, drift);
        await store.recordDrift(later!.eventId, [{ path: '$["a b"]', kind: 'field_gone', message: 'field gone: was required, missing from every sample' }]);
        expect((await store.get(drifted!.eventId))!.drift).toEqual(drift);
        expect((await store.get(fits!.eventId))!.drift).toBeUndefined();
        expect((await store.list({ drift: true })).map((d) => d.eventId)).toEqual([later!.eventId, drifted!.eventId]);
        expect((await store.list({ drift: false })).map((d) => d.eventId)).toEqual([fits!.eventId]);
        expect((await store.scan({ drift: true, limit: 1 })).map((d) => d.eventId)).toEqual([drifted!.eventId]);
        expect((await store.scan({ drift: true, limit: 5, after: { receivedAt: drifted!.receivedAt, eventId: drifted!.eventId } })).map((d) => d.eventId)).toEqual([later!.eventId]);
        // The dispatcher's lease reads the row whole, the drift with it.
        const leased = await store.leaseDue({ owner: 'o', now: later!.receivedAt + 1, leaseMs: 1000, limit: 10 });
        expect(leased.find((d) => d.eventId === drifted!.eventId)!.drift).toEqual(drift);
      }),
    );

    it(
      'pages newest first with a keyset after the last row',
      withStore(async (store) => {
        const [a, b, c] = [newDelivery(), newDelivery(), newDelivery()];
        await store.claim([a!, b!, c!]);
        const first = await store.scan({ order: 'desc', limit: 2 });
        expect(first.map((d) => d.eventId)).toEqual([c!.eventId, b!.eventId]);
        const rest = await store.scan({ order: 'desc', limit: 2, after: first.at(-1)! });
        expect(rest.map((d) => d.eventId)).toEqual([a!.eventId]);
      }),
    );

    it(
      'keeps each run duration and failure count, counts stats, and requeues only rows its owner leased',
      withStore(async (store) => {
        const d = newDelivery({ eventType: 'pod.backup.failed' });
        const ok = newDelivery();
        await store.claim([d, ok]);
        const now = ok.receivedAt + 10;
        await store.leaseDue({ owner: 'dispatcher', now, leaseMs: 1000, limit: 10 });
        await store.completeDispatch([
          {
            eventId: d.eventId, owner: 'dispatcher', status: 'dead', attempts: 1, lastError: 'h: Error: boom', nextAttemptAt: null, now, durationMs: 7,
            runs: [{ eventId: d.eventId, handler: 'h', status: 'failed', attempts: 1, lastError: 'Error: boom', durationMs: 7 }],
          },
          { eventId: ok.eventId, owner: 'dispatcher', status: 'processed', attempts: 1, lastError: null, nextAttemptAt: null, now, durationMs: 3, runs: [] },
        ]);
        expect(await store.handlerRuns([d.eventId])).toEqual([
          { eventId: d.eventId, handler: 'h', status: 'failed', attempts: 1, lastError: 'Error: boom', durationMs: 7, at: now },
        ]);
        expect((await store.get(ok.eventId))!.durationMs).toBe(3);
        const stats = await store.deliveryStats({ since: d.receivedAt - 1, maxSamples: 100 });
        const hour = Math.floor(d.receivedAt / 3_600_000) * 3_600_000;
        expect(stats.hourly.filter((r) => r.hour === hour).reduce((n, r) => n + r.count, 0)).toBeGreaterThanOrEqual(1);
        expect(stats.ledger).toEqual([{ handler: 'h', runs: 1, failures: 1 }]);
        expect(stats.firstAttempt).toEqual([{ eventType: 'pod.created', count: 1 }]);
        expect(stats.durations).toEqual(
          expect.arrayContaining([{ handler: 'h', eventType: 'pod.backup.failed', durationMs: 7 }, { handler: null, eventType: 'pod.created', durationMs: 3 }]),
        );
        expect(stats.dead).toBe(1);

        const runs = [{ handler: 'h', status: 'queued' as const, attempts: 1 }];
        // Not leased by this owner: nothing changes.
        expect(await store.requeue({ owner: 'admin', now: now + 1, deliveries: [{ eventId: d.eventId, runs }] })).toBe(0);
        expect(await store.leaseEvents({ eventIds: [d.eventId], owner: 'admin', now: now + 1, leaseMs: 1000 })).toHaveLength(1);
        expect(await store.requeue({ owner: 'admin', now: now + 2, deliveries: [{ eventId: d.eventId, runs }] })).toBe(1);
        expect(await store.get(d.eventId)).toMatchObject({ status: 'queued', nextAttemptAt: now + 2, lastError: 'h: Error: boom' });
        // Queued to run again; the last run's error and duration stay until it runs.
        expect(await store.handlerRuns([d.eventId])).toMatchObject([{ status: 'queued', attempts: 1, lastError: 'Error: boom', durationMs: 7 }]);
        const due = await store.leaseDue({ owner: 'dispatcher', now: now + 2, leaseMs: 1000, limit: 10 });
        expect(due.map((r) => r.eventId)).toEqual([d.eventId]);
        // A second failure of the same handler adds to its count.
        await store.completeDispatch([
          {
            eventId: d.eventId, owner: 'dispatcher', status: 'dead', attempts: 2, lastError: 'h: Error: again', nextAttemptAt: null, now: now + 3, durationMs: 5,
            runs: [{ eventId: d.eventId, handler: 'h', status: 'failed', attempts: 2, lastError: 'Error: again', durationMs: 5 }],
          },
        ]);
        expect((await store.deliveryStats({ since: d.receivedAt - 1, maxSamples: 100 })).ledger).toEqual([{ handler: 'h', runs: 2, failures: 2 }]);
      }),
    );
  });
}
