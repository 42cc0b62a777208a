// The example that waits for another event, run by the test kit: the later event handed to the
// waiting run (steps.deliver), or the kit's clock moved past the grace. The page goes to a real
// HTTP server on 127.0.0.1.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestSteps, runHandler, testEvent } from 'podhook/testing';
import pageUnlessRenewed from './page-unless-renewed.js';
import { orderFields } from './index.js';

const T0 = Date.UTC(2026, 10, 29, 9);
const POD = '0b6f9c3e-0e55-4a8e-9a43-6a1f0c7d2b11';
const failure = testEvent('pod.renewal_failed', { receivedAt: new Date(T0), payload: { pod: { id: POD }, error: 'payment_failed' } });

const restore: (() => void)[] = [];
afterEach(() => restore.splice(0).forEach((r) => r()));
function setEnv(name: string, value: string) {
  const before = process.env[name];
  process.env[name] = value;
  restore.push(() => (before === undefined ? delete process.env[name] : (process.env[name] = before)));
}

/** A pager on 127.0.0.1 that keeps each POSTed body. */
async function pager() {
  const bodies: unknown[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      bodies.push(JSON.parse(text));
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  restore.push(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/page`, bodies };
}

describe('page-unless-renewed', () => {
  it('waits up to RENEWAL_GRACE (30 min by default) and pages nobody when the pod is renewed meanwhile', async () => {
    const page = await pager();
    setEnv('RENEWAL_ALERT_URL', page.url);
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
    expect(page.bodies).toEqual([]);
  });

  it('pages once when the grace passes without a renewal: a warning, and one POST to RENEWAL_ALERT_URL', async () => {
    const page = await pager();
    setEnv('RENEWAL_ALERT_URL', page.url);
    setEnv('RENEWAL_GRACE', '15m');
    const steps = createTestSteps({ now: T0, orderFields });
    const first = await runHandler(pageUnlessRenewed, failure, { steps });
    expect(first.parked?.until).toEqual(new Date(T0 + 15 * 60_000));
    // Still waiting before the grace is over; a renewal received before the failure does not count.
    steps.deliver(testEvent('pod.renewed', { receivedAt: new Date(T0 - 60_000), payload: { pod: { id: POD } } }));
    steps.now = T0 + 14 * 60_000;
    expect((await runHandler(pageUnlessRenewed, failure, { steps })).outcome).toBe('parked');
    steps.now = T0 + 15 * 60_000;
    const timedOut = await runHandler(pageUnlessRenewed, failure, { steps });
    expect(timedOut.ok).toBe(true);
    expect(timedOut.logs).toMatchObject([{ level: 'warn', msg: 'pod not renewed within the grace: paging the on-call', pod_id: POD, grace: '15m', error: 'payment_failed' }]);
    expect(page.bodies).toEqual([{ text: `pod ${POD} not renewed within 15m of a failed renewal (payment_failed)`, event_id: failure.id }]);
    // Run again (a replay): the timeout and the page are recorded, nothing is sent twice.
    const again = await runHandler(pageUnlessRenewed, failure, { steps });
    expect(again.steps).toEqual({ ran: [], replayed: ['renewed', 'page the on-call'] });
    expect(page.bodies).toHaveLength(1);
  });
});
