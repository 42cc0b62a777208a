import { describe, expect, it, vi } from 'vitest';
import { createDispatcher } from '../../../src/core/dispatch/dispatcher.js';
import { withHandOff } from '../../../src/core/dispatch/hand-off.js';
import { createRouter, defineHandler } from '../../../src/index.js';
import { silentLogger } from '../../../src/core/observability/logger.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { captureLogger } from '../../helpers/capture-logger.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';
import { newDelivery } from '../../store/store-contract.js';

const tempDir = useTempDir();

function setup(concurrency: number, handler = defineHandler('pod.created', { name: 'h' }, () => {}), extra: { handOffQueue?: number } = {}) {
  const { store, close } = openSqliteStore(dbIn(tempDir()));
  const leases: number[] = [];
  // Count lease statements: the hand-off must not need one.
  const counted = { ...store, leaseDue: async (o: Parameters<typeof store.leaseDue>[0]) => (leases.push(o.limit), store.leaseDue(o)) };
  const dispatcher = createDispatcher({ store: counted, router: createRouter([handler]), logger: silentLogger, concurrency, ...extra });
  // The default deferral (a 0 ms timer), counting the hand-offs adopted by the dispatcher.
  let adopted = 0;
  const claim = withHandOff(async (d) => (await store.claim([d]))[0]!, dispatcher, (adopt) => void setTimeout(() => (adopt(), adopted++), 0));
  return { store, dispatcher, claim, leases, adopted: () => adopted, close };
}

describe('ingest hand-off', () => {
  it('runs a new delivery under the lease written with its insert, with no lease statement', async () => {
    const t = setup(4);
    const d = newDelivery({ receivedAt: Date.now() });
    expect(await t.claim(d)).toEqual({ outcome: 'new' });
    // Leased by this dispatcher from the insert on: another one cannot take it.
    expect(await t.store.leaseDue({ owner: 'other', now: Date.now(), leaseMs: 1000, limit: 10 })).toEqual([]);
    await vi.waitFor(async () => expect((await t.store.get(d.eventId))?.status).toBe('processed'), { timeout: 5000 });
    expect(t.leases).toEqual([]);
    t.close();
  });

  it('gives the slot back for a duplicate, and stores unleased beyond its capacity, then drains it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    const t = setup(1, defineHandler('pod.created', { name: 'slow' }, (e) => (started.push(e.id), gate)), { handOffQueue: 0 });
    const first = newDelivery({ receivedAt: Date.now() });
    await t.claim(first);
    expect(await t.claim({ ...first })).toMatchObject({ outcome: 'duplicate' });
    await vi.waitFor(() => expect(started, 'the first is running: the only slot is taken').toEqual([first.eventId]), { timeout: 5000 });
    const second = newDelivery({ receivedAt: Date.now() });
    expect(await t.claim(second)).toEqual({ outcome: 'new' });
    expect(await t.store.leaseDue({ owner: 'probe', now: Date.now(), leaseMs: 1, limit: 10 }).then((r) => r.map((x) => x.eventId))).toEqual([second.eventId]);
    await t.store.releaseLeases('probe');
    release();
    await vi.waitFor(async () => expect((await t.store.get(second.eventId))?.status).toBe('processed'), { timeout: 5000 });
    expect(t.leases.length).toBeGreaterThan(0); // the second came through a lease statement
    t.close();
  });

  it('keeps hand-offs that find every slot busy in memory, leased by their insert, and runs them in order', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const order: string[] = [];
    const t = setup(1, defineHandler('pod.created', { name: 'slow' }, async (e) => {
      order.push(e.id);
      await gate;
    }), { handOffQueue: 2 });
    const ds = Array.from({ length: 4 }, () => newDelivery({ receivedAt: Date.now() }));
    for (const d of ds) expect(await t.claim(d)).toEqual({ outcome: 'new' });
    await vi.waitFor(() => expect(t.adopted(), 'the three hand-offs adopted').toBe(3), { timeout: 5000 });
    // One running, two waiting in memory (leased: nobody else may take them), the fourth beyond
    // the queue stored unleased for a lease statement.
    expect(order).toEqual([ds[0]!.eventId]);
    expect((await t.store.leaseDue({ owner: 'probe', now: Date.now(), leaseMs: 1, limit: 10 })).map((x) => x.eventId)).toEqual([ds[3]!.eventId]);
    await t.store.releaseLeases('probe');
    release();
    await t.dispatcher.runUntilIdle();
    expect(order.slice(0, 3)).toEqual(ds.slice(0, 3).map((d) => d.eventId));
    expect(await t.store.queueStats()).toEqual({ queued: 0, failed: 0, dead: 0 });
    t.close();
  });

  it('does not start a waiting hand-off whose lease another claim took meanwhile; that claim runs it', async () => {
    let now = Date.now();
    const { store, close } = openSqliteStore(dbIn(tempDir()));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ran: string[] = [];
    const handler = defineHandler('pod.created', { name: 'slow' }, async (e) => {
      ran.push(e.id);
      if (ran.length === 1) await gate;
    });
    const log = captureLogger();
    const dispatcher = createDispatcher({
      store, router: createRouter([handler]), logger: log.logger, concurrency: 1, leaseMs: 1000, renewEveryMs: 10, clock: () => now,
    });
    const claim = withHandOff(async (d) => (await store.claim([d]))[0]!, dispatcher);
    const [first, late] = [newDelivery({ receivedAt: now }), newDelivery({ receivedAt: now })];
    await claim(first);
    await claim(late);
    await vi.waitFor(() => expect(ran).toEqual([first.eventId]));
    now += 2_000; // both leases ran out unrenewed (this clock stood still); another replica takes the waiting one
    expect((await store.leaseEvents({ eventIds: [late.eventId], owner: 'other', claimId: 'other.1', now, leaseMs: 60_000 })).map((d) => d.eventId)).toEqual([late.eventId]);
    // The next renewal keeps the running one (nobody took it) and finds the waiting one lost.
    await vi.waitFor(() => expect(log.records().filter((r) => r.msg?.toString().startsWith('lease lost')).map((r) => r.event_id)).toEqual([late.eventId]));
    release();
    await dispatcher.runUntilIdle();
    expect(ran).toEqual([first.eventId]);
    expect(await store.get(first.eventId)).toMatchObject({ status: 'processed' });
    expect(await store.get(late.eventId)).toMatchObject({ status: 'queued', attempts: 0 });
    await store.completeDispatch([{ eventId: late.eventId, owner: 'other', claimId: 'other.1', status: 'processed', attempts: 1, lastError: null, nextAttemptAt: null, now, runs: [] }]);
    expect(await store.get(late.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
    await dispatcher.stop();
    close();
  });

  it('brings a burst larger than its capacity to processed with no poll timer, and runUntilIdle returns', async () => {
    const t = setup(4);
    const burst = Array.from({ length: 40 }, () => newDelivery({ receivedAt: Date.now() }));
    expect((await Promise.all(burst.map((d) => t.claim(d)))).every((r) => r.outcome === 'new')).toBe(true);
    await Promise.race([t.dispatcher.runUntilIdle(), new Promise((_, reject) => setTimeout(() => reject(new Error('runUntilIdle did not return')), 5000))]);
    expect(await t.store.queueStats()).toEqual({ queued: 0, failed: 0, dead: 0 });
    expect((await t.store.list({ status: 'processed', limit: 100 })).length).toBe(40);
    t.close();
  });

  it('dispatches the payload ingest already parsed, without parsing the body again', async () => {
    const seen: unknown[] = [];
    const t = setup(4, defineHandler('pod.created', { name: 'see' }, (e) => void seen.push(e.payload)));
    const parsed = { parsed: 'by ingest' };
    const d = newDelivery({ receivedAt: Date.now(), body: new TextEncoder().encode('{"from":"the body"}'), payload: parsed });
    await t.claim(d);
    await vi.waitFor(async () => expect((await t.store.get(d.eventId))?.status).toBe('processed'), { timeout: 5000 });
    expect(seen).toEqual([parsed]);
    t.close();
  });
});
