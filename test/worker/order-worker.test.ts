import { createScheduledController, createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { handlers, orderedRuns, resetOrderedRuns } from '../fixtures/ordered-handlers.js';
import { signDelivery, toRequest, TEST_SECRET } from '../helpers/sign.js';
import { openWorkerTarget } from './worker-target.js';

const BASE = Date.UTC(2026, 10, 25, 12);

describe('ordered handlers on the Worker (D1 in workerd)', () => {
  it('runs a burst posted out of order in each pod\'s order once the hold is over (the cron drains it)', async () => {
    resetOrderedRuns();
    const t = await openWorkerTarget({ secrets: [TEST_SECRET] }, { handlers, vars: { DISPATCHER: 'on', ORDER_HOLD_MS: '1000' } });
    const sends = ['pod-1', 'pod-2', 'pod-3'].flatMap((pod) => [3, 0, 2, 1].map((i) => ({ pod, at: BASE + i * 1000 })));
    for (const s of sends) {
      const d = signDelivery({ t: Math.floor(t.now() / 1000), eventType: 'pod.status.changed', body: { pod: { id: s.pod }, occurred_at: new Date(s.at).toISOString() } });
      expect((await t.fetch(toRequest(d))).status).toBe(200);
    }
    // Each delivery's unordered handler ran after its answer; the ordered ones wait for the hold.
    expect(orderedRuns().filter((r) => r.handler === 'notify')).toHaveLength(12);
    expect(orderedRuns().filter((r) => r.handler === 'syncPod')).toHaveLength(0);

    t.setNow(t.now() + 1_500);
    const ctx = createExecutionContext();
    await t.worker.scheduled!(createScheduledController({ scheduledTime: t.now(), cron: '* * * * *' }), t.env, ctx);
    await waitOnExecutionContext(ctx);

    for (const pod of ['pod-1', 'pod-2', 'pod-3']) {
      for (const handler of ['syncPod', 'latestStatus']) {
        const runs = orderedRuns().filter((r) => r.handler === handler && r.pod === pod);
        expect(runs.map((r) => r.at), `${handler} on ${pod}`).toEqual([0, 1, 2, 3].map((i) => BASE + i * 1000));
        expect(runs.every((r) => !r.stale && r.ok)).toBe(true);
      }
    }
    expect((await t.store.list({ limit: 100 })).every((d) => d.status === 'processed')).toBe(true);
  });
});
