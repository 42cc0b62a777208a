import { describe, expect, it } from 'vitest';
import { createBackfillStepper, scheduleBackfills, startBackfill } from '../../../src/core/backfill/index.js';
import type { DeliveryStore } from '../../../src/core/delivery-store.js';
import { createDispatcher } from '../../../src/core/dispatch/dispatcher.js';
import { createRouter } from '../../../src/core/dispatch/router.js';
import { defineHandler } from '../../../src/core/events/define-handler.js';
import { silentLogger } from '../../../src/core/observability/logger.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { historyDeliveries } from '../../helpers/seed-history.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';

const tempDir = useTempDir();
const DAY = 86_400_000;
const OWNER = 'receiver-1';

async function setup(wrap: (store: DeliveryStore) => DeliveryStore = (s) => s) {
  const opened = openSqliteStore(dbIn(tempDir()));
  const handlers = [defineHandler('pod.status.changed', { name: 'late' }, () => {})];
  const router = createRouter(handlers);
  await opened.store.importDeliveries(historyDeliveries({ count: 20, pods: 4, from: Date.now() - DAY }));
  const { backfill } = await startBackfill(opened.store, handlers, { handler: 'late' }, Date.now());
  const store = wrap(opened.store);
  const dispatcher = createDispatcher({ store, router, logger: silentLogger, owner: OWNER });
  const stepper = createBackfillStepper({ store, router, dispatcher, owner: OWNER, clock: Date.now, logger: silentLogger, leaseMs: 60_000 });
  return { ...opened, backfill, dispatcher, stepper };
}

describe('backfill stepper', () => {
  it('takes back a backfill this receiver leased itself and lost track of (a step that threw after the claim), without waiting out the lease', async () => {
    const t = await setup();
    // An earlier step of this receiver took the lease, then threw before it kept it.
    expect(await t.store.claimBackfill({ id: t.backfill.id, owner: OWNER, claimId: `${OWNER}.backfill.old`, now: Date.now(), leaseMs: 60_000 })).not.toBeNull();
    const step = await t.stepper.step();
    expect(step).toMatchObject({ kind: 'requeued', id: t.backfill.id });
    // Another receiver still may not take it while the lease lives.
    const other = createBackfillStepper({ store: t.store, router: createRouter([defineHandler('pod.status.changed', { name: 'late' }, () => {})]), dispatcher: t.dispatcher, owner: 'receiver-2', clock: Date.now, logger: silentLogger, leaseMs: 60_000 });
    expect(await other.step()).toMatchObject({ kind: 'idle' });
    await t.dispatcher.stop(0);
    t.close();
  });

  it('each step says when the next may run', async () => {
    const t = await setup();
    const first = await t.stepper.step({ budget: 5 });
    expect(first).toMatchObject({ kind: 'requeued', requeued: 5 });
    expect(first.nextMs).toBeGreaterThan(0);
    await t.dispatcher.runUntilIdle();
    let last = first;
    while (last.kind !== 'finished') last = await t.stepper.step({ budget: 50 });
    expect(last).toMatchObject({ kind: 'finished', state: 'done', nextMs: 0 });
    expect(await t.stepper.step()).toMatchObject({ kind: 'idle', nextMs: 5_000 });
    await t.dispatcher.stop(0);
    t.close();
  });

  it('a scheduler stops within its grace while a step hangs on the store, and gives the lease back', async () => {
    let hang = false;
    let hung!: () => void;
    const stuck = new Promise<void>((r) => (hung = r));
    const t = await setup((s) => ({
      ...s,
      backfillPage: (...args) => (hang ? (hung(), new Promise(() => {})) : s.backfillPage(...args)),
    }));
    const scheduler = scheduleBackfills(t.stepper, { dispatcher: t.dispatcher, logger: silentLogger });
    hang = true;
    scheduler.start();
    await stuck;
    const started = performance.now();
    await scheduler.stop(150);
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(140);
    expect(took).toBeLessThan(2_000);
    expect((await t.store.getBackfill(t.backfill.id))!.lease!.until).toBeLessThan(Date.now());
    await t.dispatcher.stop(0);
    t.close();
  });
});
