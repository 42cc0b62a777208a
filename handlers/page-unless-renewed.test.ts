// The example that waits for another event, run by the test kit: the later event handed to the
// waiting run (steps.deliver), or the kit's clock moved past the grace. Runs on Node and in
// workerd; the page's POST is page-unless-renewed.node.test.ts.
import { describe, expect, it } from 'vitest';
import { createTestSteps, runHandler, testEvent } from 'podhook/testing';
import pageUnlessRenewed from './page-unless-renewed.js';
import { orderFields } from './index.js';

const T0 = Date.UTC(2026, 10, 29, 9);
const POD = '0b6f9c3e-0e55-4a8e-9a43-6a1f0c7d2b11';
const failure = testEvent('pod.renewal_failed', { receivedAt: new Date(T0), payload: { pod: { id: POD }, error: 'payment_failed' } });

describe('page-unless-renewed', () => {
  it('waits up to 30 min and pages nobody when the pod is renewed meanwhile', async () => {
    const steps = createTestSteps({ now: T0, orderFields });
    const first = await runHandler(pageUnlessRenewed, failure, { steps });
    expect(first).toMatchObject({ ok: false, outcome: 'parked', parked: { step: 'renewed', until: new Date(T0 + 30 * 60_000) } });
    // A renewal of another pod is no match; the pod's own, 10 minutes later, is.
    steps.deliver(testEvent('pod.renewed', { receivedAt: new Date(T0 + 5 * 60_000), payload: { pod: { id: '7d1e0f42-5b7c-4f0e-8a57-3c2b1a0f9e88' } } }));
    const renewal = testEvent('pod.renewed', { receivedAt: new Date(T0 + 10 * 60_000), payload: { pod: { id: POD } } });
    steps.deliver(renewal);
    steps.now = T0 + 10 * 60_000;
    const woken = await runHandler(pageUnlessRenewed, failure, { steps });
    expect(woken.ok).toBe(true);
    expect(woken.logs).toMatchObject([{ level: 'info', msg: 'pod renewed within the grace: no page', pod_id: POD, renewed_event_id: renewal.id, healed_after_ms: 10 * 60_000 }]);
  });

  it('warns when the grace passes without a renewal (one received before the failure does not count)', async () => {
    const steps = createTestSteps({ now: T0, orderFields });
    expect((await runHandler(pageUnlessRenewed, failure, { steps })).outcome).toBe('parked');
    steps.deliver(testEvent('pod.renewed', { receivedAt: new Date(T0 - 60_000), payload: { pod: { id: POD } } }));
    steps.now = T0 + 29 * 60_000;
    expect((await runHandler(pageUnlessRenewed, failure, { steps })).outcome).toBe('parked');
    steps.now = T0 + 30 * 60_000;
    const timedOut = await runHandler(pageUnlessRenewed, failure, { steps });
    expect(timedOut.ok).toBe(true);
    expect(timedOut.logs).toMatchObject([{ level: 'warn', msg: 'pod not renewed within the grace: paging the on-call', pod_id: POD, grace: '30m', error: 'payment_failed' }]);
    // Run again (a replay): the timeout is recorded.
    expect((await runHandler(pageUnlessRenewed, failure, { steps })).steps).toEqual({ ran: [], replayed: ['renewed'] });
  });
});
