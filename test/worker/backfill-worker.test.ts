import { describe, expect, it } from 'vitest';
import { startBackfill } from '../../src/core/backfill/start-backfill.js';
import { WORKER_BACKFILL_PAGE } from '../../src/worker/worker-runtime.js';
import { handlers, orderedRuns, resetOrderedRuns } from '../fixtures/ordered-handlers.js';
import { historyDeliveries } from '../helpers/seed-history.js';
import { TEST_SECRET } from '../helpers/sign.js';
import { openWorkerTarget, runCron } from './worker-target.js';

const MINUTE = 60_000;

describe('a backfill on the Worker (D1 in workerd)', () => {
  it('advances one page per cron run, each page run by that run\'s drain, until done', async () => {
    resetOrderedRuns();
    const t = await openWorkerTarget({ secrets: [TEST_SECRET] }, { handlers, vars: { DISPATCHER: 'on', ORDER_HOLD_MS: '0' } });
    const history = historyDeliveries({ count: 60, pods: 6, from: t.now() - 7 * 86_400_000 });
    await t.store.importDeliveries(history);
    await runCron(t); // the first cron run records the handlers as running from now
    expect((await t.store.handlerRegistrations()).find((r) => r.handler === 'syncPod')?.firstSeenAt).toBe(t.now());
    const { backfill } = await startBackfill(t.store, handlers, { handler: 'syncPod' }, t.now());
    expect(backfill.total).toBe(60);

    const progress: number[] = [];
    for (let run = 0; run < 4; run++) {
      t.setNow(t.now() + MINUTE);
      await runCron(t);
      progress.push((await t.store.getBackfill(backfill.id))!.requeued);
      // Whatever a run handed over, that run's drain ran.
      expect(orderedRuns().filter((r) => r.handler === 'syncPod')).toHaveLength(progress.at(-1)!);
    }
    expect(progress).toEqual([WORKER_BACKFILL_PAGE, 2 * WORKER_BACKFILL_PAGE, 60, 60]);
    expect(await t.store.getBackfill(backfill.id)).toMatchObject({ state: 'done', requeued: 60, skipped: 0, total: 60 });
    const runs = orderedRuns();
    expect(runs.every((r) => r.handler === 'syncPod' && r.ok && !r.stale)).toBe(true);
    expect(runs.map((r) => r.id).sort()).toEqual(history.map((d) => d.eventId).sort());
    for (let p = 0; p < 6; p++) {
      const at = runs.filter((r) => r.pod === `pod-${p}`).map((r) => r.at);
      expect(at).toEqual([...at].sort((a, b) => a - b));
    }
    expect((await t.store.list({ limit: 100 })).every((d) => d.status === 'processed')).toBe(true);
  });
});
