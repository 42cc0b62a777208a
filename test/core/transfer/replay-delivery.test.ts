import { describe, expect, it } from 'vitest';
import { createDispatcher } from '../../../src/core/dispatch/dispatcher.js';
import { createRouter } from '../../../src/core/dispatch/router.js';
import { defineHandler } from '../../../src/core/events/define-handler.js';
import { silentLogger } from '../../../src/core/observability/logger.js';
import { createReplayer } from '../../../src/core/transfer/replay-delivery.js';
import { createRequeuer } from '../../../src/core/transfer/requeue-deliveries.js';
import { readRuns } from '../../../src/http/admin/admin-queries.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';
import { newDelivery } from '../../store/store-contract.js';

const tempDir = useTempDir();

function setup(handle: () => unknown = () => {}) {
  const opened = openSqliteStore(dbIn(tempDir()));
  const handlers = [defineHandler('pod.created', { name: 'notify' }, handle), defineHandler('pod.created', { name: 'audit' }, () => {})];
  const router = createRouter(handlers);
  const dispatcher = createDispatcher({ store: opened.store, router, logger: silentLogger, owner: 'replica-a' });
  return { ...opened, router, dispatcher };
}

/** A delivery processed at its first attempt by `replica-a`: it leaves no ledger or history row. */
async function processedOnce(t: ReturnType<typeof setup>) {
  const d = newDelivery({ receivedAt: Date.now() });
  await t.store.claim([d]);
  await t.dispatcher.runUntilIdle();
  const stored = (await t.store.get(d.eventId))!;
  expect(stored).toMatchObject({ status: 'processed', attempts: 1 });
  expect(await t.store.handlerAttempts([d.eventId])).toEqual([]);
  return stored;
}

describe('a replay is a run', () => {
  it('podhook replay of a delivery processed at its first attempt lists both runs of each handler, in order, with their replicas', async () => {
    const t = setup();
    const first = await processedOnce(t);
    const replayer = createReplayer({ store: t.store, router: t.router, logger: silentLogger, owner: 'replay-b' });
    expect(await replayer.replay(first)).toMatchObject({ outcome: 'succeeded', status: 'processed' });
    const runs = await readRuns(t.store, (await t.store.get(first.eventId))!, t.router);
    expect(runs.map((r) => [r.handler, r.attempt, r.outcome, r.replica])).toEqual([
      ['audit', 1, 'succeeded', 'replica-a'],
      ['notify', 1, 'succeeded', 'replica-a'],
      ['audit', 2, 'succeeded', 'replay-b'],
      ['notify', 2, 'succeeded', 'replay-b'],
    ]);
    expect(runs[0]!.at).toBe(new Date(first.processedAt!).toISOString());
    t.close();
  });

  it('the admin API replay (requeued for the dispatcher) lists the first run and the replayed one', async () => {
    const t = setup();
    const first = await processedOnce(t);
    expect(await createRequeuer({ store: t.store, router: t.router })([first.eventId])).toEqual({ requeued: 1, skipped: 0 });
    await t.dispatcher.runUntilIdle();
    const runs = await readRuns(t.store, (await t.store.get(first.eventId))!, t.router);
    expect(runs.map((r) => [r.handler, r.attempt, r.outcome, r.replica])).toEqual([
      ['audit', 1, 'succeeded', 'replica-a'],
      ['notify', 1, 'succeeded', 'replica-a'],
      ['audit', 2, 'succeeded', 'replica-a'],
      ['notify', 2, 'succeeded', 'replica-a'],
    ]);
    t.close();
  });

  it('reports a replay whose outcome the claim check refused as lost, not succeeded, and records nothing of it', async () => {
    let takeOver: (() => Promise<unknown>) | undefined;
    const t = setup(() => takeOver?.());
    const first = await processedOnce(t);
    // While the replay's handler runs, its lease runs out and another replica leases the delivery.
    takeOver = () => t.store.leaseEvents({ eventIds: [first.eventId], owner: 'other', claimId: 'other.1', now: Date.now() + 3_600_000, leaseMs: 60_000 });
    const replayer = createReplayer({ store: t.store, router: t.router, logger: silentLogger, owner: 'replay-b' });
    const result = await replayer.replay(first);
    expect(result).toMatchObject({ outcome: 'lost', status: 'processed' });
    expect(result.reason).toContain('another podhook took the delivery over');
    expect(await t.store.handlerAttempts([first.eventId])).toEqual([]);
    expect(await t.store.get(first.eventId)).toMatchObject({ status: 'processed', attempts: 1, ranBy: 'replica-a' });
    t.close();
  });
});
