import type { TestReceiver, TestReceiverOptions } from './test-receiver.js';

const inWorkerd = () => typeof navigator !== 'undefined' && navigator.userAgent === 'Cloudflare-Workers';

/**
 * A real receiver (ingest, the SQLite store on a temporary file, the dispatcher) in this
 * process, reached through `app.request`: no port. Node only: it needs better-sqlite3.
 *
 * @example
 * const receiver = await createTestReceiver({ handlers });
 * expect((await receiver.deliver('pod.created')).status).toBe(200);
 * await receiver.settle();
 * expect((await receiver.deliveries())[0]!.status).toBe('processed');
 * await receiver.close();
 */
export async function createTestReceiver(options: TestReceiverOptions): Promise<TestReceiver> {
  if (inWorkerd()) {
    throw new Error(
      'createTestReceiver runs on Node only (it stores deliveries with better-sqlite3): in the workerd pool, test handlers with runHandler and testEvent (docs/handlers.md)',
    );
  }
  // Loaded on demand, so `podhook/testing` itself imports nothing Node-only.
  const { startTestReceiver } = await import('./node-test-receiver.js');
  return startTestReceiver(options);
}
