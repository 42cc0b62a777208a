import { describe, expect, it, vi } from 'vitest';
import type { DeliveryStore } from '../../../src/core/delivery-store.js';
import { createDispatcher } from '../../../src/core/dispatch/dispatcher.js';
import { createPodhookMetrics } from '../../../src/core/observability/podhook-metrics.js';
import { createRouter, defineHandler } from '../../../src/index.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { captureLogger } from '../../helpers/capture-logger.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';
import { newDelivery } from '../../store/store-contract.js';

const tempDir = useTempDir();

/**
 * One dispatcher on a real SQLite store whose clock the test moves; its renewal timer ticks every
 * 10 ms of real time, so each tick sees the clock wherever the test has put it.
 */
function setup(wrap: (store: DeliveryStore) => DeliveryStore = (s) => s, { concurrency }: { concurrency?: number } = {}) {
  const { store, close } = openSqliteStore(dbIn(tempDir()));
  let now = Date.now();
  const log = captureLogger();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const signals: AbortSignal[] = [];
  const handler = defineHandler('pod.created', { name: 'long', timeoutMs: 3_600_000 }, async (_e, { signal }) => {
    signals.push(signal);
    await Promise.race([gate, new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)))]);
  });
  const metrics = createPodhookMetrics(store);
  const dispatcher = createDispatcher({
    store: wrap(store), router: createRouter([handler]), logger: log.logger, leaseMs: 1000, renewEveryMs: 10, clock: () => now, instruments: [metrics.instrument], concurrency,
  });
  const lostLines = () => log.records().filter((r) => String(r.msg).startsWith('lease lost'));
  return {
    store, dispatcher, log, signals, release, lostLines,
    metricsText: () => metrics.registry.render(),
    advance: (ms: number) => (now += ms),
    now: () => now,
    async start() {
      const d = newDelivery({ receivedAt: now });
      await store.claim([d]);
      dispatcher.wake();
      await vi.waitFor(() => expect(signals).toHaveLength(1));
      return d;
    },
    async close() {
      await dispatcher.stop(0);
      close();
    },
  };
}

describe('dispatch leases: renewed while a handler runs, fenced by claim id', () => {
  it('keeps the lease of a handler running far longer than LEASE_MS, so no other dispatcher takes the delivery', async () => {
    const renewedUntil: number[] = [];
    const t = setup((s) => ({
      ...s,
      renewLeases: async (o) => {
        const kept = await s.renewLeases(o);
        if (kept.length > 0) renewedUntil.push(o.until);
        return kept;
      },
    }));
    const d = await t.start();
    for (let i = 0; i < 5; i++) {
      t.advance(700); // past the lease's first end by the second step: only renewal keeps it
      const mark = t.now();
      await vi.waitFor(() => expect(renewedUntil.at(-1)).toBe(mark + 1000));
      // Another dispatcher a moment later finds nothing to lease: the lease was renewed past it.
      expect(await t.store.leaseDue({ owner: 'other', now: mark + 200, leaseMs: 1, limit: 10 })).toEqual([]);
    }
    t.release();
    await t.dispatcher.runUntilIdle();
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
    expect(t.signals[0]!.aborted).toBe(false);
    expect(t.lostLines()).toEqual([]);
    expect(await t.metricsText()).not.toContain('podhook_leases_lost_total{');
    await t.close();
  });

  it('aborts the handler of a lease another claim took over and records nothing over that claim', async () => {
    const t = setup();
    const d = await t.start();
    t.advance(5_000); // paused past its lease: this clock stood still, nothing was renewed
    const [taken] = await t.store.leaseDue({ owner: 'other', claimId: 'other.1', now: t.now(), leaseMs: 60_000, limit: 1 });
    expect(taken?.eventId).toBe(d.eventId);
    await vi.waitFor(() => expect(t.signals[0]!.aborted).toBe(true));
    expect(String(t.signals[0]!.reason)).toContain('lease lost');
    expect(t.lostLines()).toMatchObject([{ event_id: d.eventId, reason: 'taken_over' }]);
    expect(await t.metricsText()).toContain('podhook_leases_lost_total{reason="taken_over"} 1');
    await t.dispatcher.runUntilIdle();
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'queued', attempts: 0 });
    await t.store.completeDispatch([{ eventId: d.eventId, owner: 'other', claimId: 'other.1', status: 'processed', attempts: 1, lastError: null, nextAttemptAt: null, now: t.now(), runs: [] }]);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
    await t.close();
  });

  it('aborts the handler before its lease runs out when the store cannot renew it, and leaves the delivery to be leased again', async () => {
    let down = false;
    const t = setup((s) => ({
      ...s,
      renewLeases: (o) => (down ? Promise.reject(new Error('connection refused')) : s.renewLeases(o)),
    }));
    const d = await t.start();
    down = true;
    t.advance(500);
    await vi.waitFor(() => expect(t.log.records().some((r) => r.msg === 'could not renew leases')).toBe(true));
    expect(t.signals[0]!.aborted).toBe(false); // half the lease left: it may still be renewed
    t.advance(495); // 5 ms left, less than one renewal interval
    await vi.waitFor(() => expect(t.signals[0]!.aborted).toBe(true));
    expect(t.lostLines()).toMatchObject([{ event_id: d.eventId, reason: 'not_renewed' }]);
    expect(await t.metricsText()).toContain('podhook_leases_lost_total{reason="not_renewed"} 1');
    await t.dispatcher.runUntilIdle();
    // No attempt was recorded: once the lease ends, any dispatcher leases it again.
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'queued', attempts: 0 });
    expect(await t.store.leaseDue({ owner: 'other', now: t.now() + 10, leaseMs: 1000, limit: 1 })).toHaveLength(1);
    await t.close();
  });

  it('forgets the lease of a hand-off it lost while the hand-off waited for a slot: nothing is kept or renewed for it', async () => {
    const t = setup(undefined, { concurrency: 1 });
    await t.start(); // holds the one slot
    const waiting = newDelivery({ receivedAt: t.now() });
    const grant = t.dispatcher.reserve()!;
    await t.store.claim([{ ...waiting, lease: grant }]);
    t.dispatcher.adopt(grant, waiting);
    expect(t.dispatcher.load()).toMatchObject({ running: 1, waiting: 1, leases: 2 });
    t.advance(5_000); // paused past the lease; another replica takes the waiting one over
    expect(await t.store.leaseEvents({ eventIds: [waiting.eventId], owner: 'other', claimId: 'other.1', now: t.now(), leaseMs: 60_000 })).toHaveLength(1);
    await vi.waitFor(() => expect(t.lostLines()).toMatchObject([{ event_id: waiting.eventId, reason: 'taken_over' }]));
    t.release();
    await t.dispatcher.runUntilIdle();
    // The slot freed, the lost hand-off was dropped, not run, and its lease forgotten: no timer renews it for ever.
    expect(t.signals).toHaveLength(1);
    expect(t.dispatcher.load()).toMatchObject({ running: 0, waiting: 0, leases: 0 });
    await t.close();
  });
});
