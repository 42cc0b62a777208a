// A backfill on one Node runtime in this process (the ordered-handlers fixture records its runs in
// memory): the runner requeues pages for the dispatcher, which runs the backfill's handler alone,
// in each pod's order; a live event newer than the history makes the backfilled ones stale.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startBackfill } from '../../src/core/backfill/start-backfill.js';
import { parseConfig } from '../../src/core/config.js';
import { silentLogger } from '../../src/core/observability/logger.js';
import { createNodeRuntime, type NodeRuntime } from '../../src/node/node-runtime.js';
import { handlers, orderedRuns, resetOrderedRuns } from '../fixtures/ordered-handlers.js';
import { historyDeliveries } from '../helpers/seed-history.js';
import { signDelivery, TEST_SECRET } from '../helpers/sign.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();
const DAY = 86_400_000;
const runtimes: NodeRuntime[] = [];
afterEach(() => Promise.all(runtimes.splice(0).map((r) => r.close(1000))));

/** A Node receiver in this process with the ordered-handlers fixture (runs recorded in memory), background not yet started. */
function start(env: Record<string, string> = {}) {
  resetOrderedRuns();
  const config = parseConfig({ DATABASE_PATH: dbIn(tempDir()), SVC_WEBHOOK_SECRET: TEST_SECRET, DISPATCH_POLL_MS: '50', ORDER_HOLD_MS: '0', ...env });
  const runtime = createNodeRuntime({ config, logger: silentLogger, handlers });
  runtimes.push(runtime);
  return runtime;
}

async function finished(r: NodeRuntime, id: string) {
  await vi.waitFor(async () => expect((await r.store.getBackfill(id))?.state).toBe('done'), { timeout: 30_000, interval: 50 });
  await vi.waitFor(async () => expect((await r.store.list({ status: 'queued', limit: 10 })).length).toBe(0), { timeout: 30_000, interval: 50 });
}

describe('a backfill on one Node receiver', () => {
  it('runs the new handler once on each stored delivery, alone, in each pod\'s order; a live newer event makes older ones stale', { timeout: 60_000 }, async () => {
    const r = start();
    const history = historyDeliveries({ count: 300, pods: 30, from: Date.now() - 10 * DAY });
    await r.store.importDeliveries(history);
    r.startBackground();
    await vi.waitFor(async () => expect((await r.store.handlerRegistrations()).map((x) => x.handler)).toContain('syncPod'));
    // pod-0 gets a live event that happened after its whole history: the history runs stale for it.
    const live = signDelivery({ t: Math.floor(Date.now() / 1000), eventType: 'pod.status.changed', body: { pod: { id: 'pod-0' }, occurred_at: new Date().toISOString() } });
    expect((await r.app.request('/webhooks', { method: 'POST', headers: live.headers, body: live.body })).status).toBe(200);
    await vi.waitFor(() => expect(orderedRuns().filter((x) => x.id === live.eventId && x.handler === 'syncPod')).toHaveLength(1));

    const { backfill, plan } = await startBackfill(r.store, handlers, { handler: 'syncPod' }, Date.now());
    expect(plan.counts).toEqual({ matching: 300, handled: 0, deadLetters: 0 });
    r.backfills.wake();
    await finished(r, backfill.id);

    const runs = orderedRuns().filter((x) => x.id !== live.eventId);
    // Only the backfill's handler ran on history, once each.
    expect(runs.filter((x) => x.handler !== 'syncPod')).toEqual([]);
    expect(runs.map((x) => x.id).sort()).toEqual(history.map((d) => d.eventId).sort());
    for (let p = 1; p < 30; p++) {
      const pod = runs.filter((x) => x.pod === `pod-${p}`).sort((a, b) => a.start - b.start);
      expect(pod.map((x) => x.at)).toEqual(pod.map((x) => x.at).sort((a, b) => a - b));
      expect(pod.every((x) => !x.stale)).toBe(true);
    }
    expect(runs.filter((x) => x.pod === 'pod-0').every((x) => x.stale && x.newest === live.eventId)).toBe(true);
    expect(await r.store.getBackfill(backfill.id)).toMatchObject({ state: 'done', total: 300, requeued: 300, skipped: 0 });
    expect((await r.store.list({ limit: 1000 })).every((d) => d.status === 'processed')).toBe(true);

    // Started again: every delivery is already handled.
    const again = await startBackfill(r.store, handlers, { handler: 'syncPod' }, Date.now());
    expect(again.plan.counts).toMatchObject({ matching: 300, handled: 300 });
    r.backfills.wake();
    await finished(r, again.backfill.id);
    expect(await r.store.getBackfill(again.backfill.id)).toMatchObject({ requeued: 0, skipped: 300 });
    expect(orderedRuns().filter((x) => x.id !== live.eventId)).toHaveLength(300);
  });
});
