// The example's page: one POST to RENEWAL_ALERT_URL (a real HTTP server on 127.0.0.1) when the
// grace passes without a renewal, none when the pod is renewed, never twice. Node only (a server).
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

/** A pager on 127.0.0.1 that keeps each POSTed body and its idempotency key. */
async function pager() {
  const posts: { body: unknown; key: string | undefined }[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      posts.push({ body: JSON.parse(text), key: req.headers['idempotency-key'] as string | undefined });
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  restore.push(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/page`, posts };
}

describe('page-unless-renewed: the page', () => {
  it('POSTs once to RENEWAL_ALERT_URL when RENEWAL_GRACE passes without a renewal, and never again on a replay', async () => {
    const page = await pager();
    setEnv('RENEWAL_ALERT_URL', page.url);
    setEnv('RENEWAL_GRACE', '15m');
    const steps = createTestSteps({ now: T0, orderFields });
    expect((await runHandler(pageUnlessRenewed, failure, { steps })).parked?.until).toEqual(new Date(T0 + 15 * 60_000));
    steps.now = T0 + 15 * 60_000;
    const timedOut = await runHandler(pageUnlessRenewed, failure, { steps });
    expect(timedOut.ok).toBe(true);
    expect(page.posts).toEqual([{ body: { text: `pod ${POD} not renewed within 15m of a failed renewal (payment_failed)`, event_id: failure.id }, key: failure.id }]);
    const again = await runHandler(pageUnlessRenewed, failure, { steps });
    expect(again.steps).toEqual({ ran: [], replayed: ['renewed', 'page the on-call'] });
    expect(page.posts).toHaveLength(1);
  });

  it('POSTs nothing when the pod is renewed in time', async () => {
    const page = await pager();
    setEnv('RENEWAL_ALERT_URL', page.url);
    const steps = createTestSteps({ now: T0, orderFields });
    await runHandler(pageUnlessRenewed, failure, { steps });
    steps.deliver(testEvent('pod.renewed', { receivedAt: new Date(T0 + 60_000), payload: { pod: { id: POD } } }));
    expect((await runHandler(pageUnlessRenewed, failure, { steps })).ok).toBe(true);
    expect(page.posts).toEqual([]);
  });
});
