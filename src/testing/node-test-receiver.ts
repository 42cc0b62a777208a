import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, type Config } from '../core/config.js';
import { createRouter } from '../core/dispatch/router.js';
import { deliveryRows } from '../core/transfer/delivery-rows.js';
import { createNodeRuntime } from '../node/node-runtime.js';
import { captureLogs } from './capture-logs.js';
import { signDelivery } from './sign.js';
import type { TestReceiver, TestReceiverOptions } from './test-receiver.js';

const SETTLE_HORIZON_MS = 1000;

/** createTestReceiver's Node half: a NodeRuntime on a temporary SQLite file. */
export function startTestReceiver({
  handlers,
  secret = `whsec_test_${crypto.randomUUID().replaceAll('-', '')}`,
  maxAttempts,
  retryBaseMs = 10,
  retryMaxMs = 100,
  handlerTimeoutMs,
  webhookPath,
  maxBodyBytes,
  settleTimeoutMs = 10_000,
}: TestReceiverOptions): TestReceiver {
  const dir = mkdtempSync(join(tmpdir(), 'podhook-test-receiver-'));
  const base = parseConfig({});
  const config: Config = {
    ...base,
    databasePath: join(dir, 'podhook.db'),
    secrets: [secret],
    webhookPath: webhookPath ?? base.webhookPath,
    maxBodyBytes: maxBodyBytes ?? base.maxBodyBytes,
    dispatch: {
      ...base.dispatch,
      maxAttempts: maxAttempts ?? base.dispatch.maxAttempts,
      handlerTimeoutMs: handlerTimeoutMs ?? base.dispatch.handlerTimeoutMs,
      retryBaseMs,
      retryMaxMs,
    },
  };
  const { logger, lines } = captureLogs();
  const runtime = createNodeRuntime({ config, logger, handlers });
  const { store, dispatcher } = runtime;
  const router = createRouter(handlers);

  /** What keeps the receiver from being settled: queued rows, and failed ones due within the horizon. */
  async function pending() {
    const horizon = Date.now() + SETTLE_HORIZON_MS;
    const queued = await store.list({ status: 'queued', limit: 1000 });
    const failed = (await store.list({ status: 'failed', limit: 1000 })).filter((d) => d.nextAttemptAt !== null && d.nextAttemptAt <= horizon);
    return [...queued, ...failed];
  }

  let closed: Promise<void> | undefined;
  return {
    secret,
    databasePath: config.databasePath,
    async deliver(type, payload, { id } = {}) {
      const d = await signDelivery({ secret, type, payload, id });
      const res = await runtime.app.request(config.webhookPath, { method: 'POST', headers: d.headers, body: d.body });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Not JSON: the text as it came.
      }
      return { status: res.status, body };
    },
    async settle() {
      const deadline = Date.now() + settleTimeoutMs;
      for (;;) {
        await dispatcher.runUntilIdle();
        const left = await pending();
        if (left.length === 0) return;
        if (Date.now() > deadline) {
          const list = left.map((d) => `${d.eventId} ${d.eventType} ${d.status}`).join(', ');
          throw new Error(`settle(): deliveries still pending after ${settleTimeoutMs} ms: ${list}`);
        }
        const next = Math.min(...left.map((d) => d.nextAttemptAt ?? Date.now()));
        await new Promise((r) => setTimeout(r, Math.max(5, next - Date.now())));
      }
    },
    async deliveries() {
      return deliveryRows(store, await store.list({ limit: 100_000 }));
    },
    async runs(eventId) {
      const ledger = await store.handlerRuns([eventId]);
      if (ledger.length > 0) return ledger.map((r) => ({ handler: r.handler, attempt: r.attempts, outcome: r.status, error: r.lastError }));
      // The dispatcher writes no ledger for a delivery processed at its first attempt: its status says it all.
      const delivery = await store.get(eventId);
      if (delivery?.status !== 'processed') return [];
      return router.handlersFor(delivery.eventType).map((h) => ({ handler: h.name, attempt: 1, outcome: 'succeeded' as const, error: null }));
    },
    logs: () => [...lines],
    close() {
      closed ??= (async () => {
        try {
          await runtime.close(1000);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      })();
      return closed;
    },
  };
}
