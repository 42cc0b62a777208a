// A whole receiver in the test: a delivery signed like the service's, stored in a temporary
// SQLite file, dispatched with retries. `.node.test.ts`: createTestReceiver needs Node
// (better-sqlite3), so `npm run test:handlers:worker` leaves this file out.
import { afterEach, expect, it } from 'vitest';
import { defineHandler } from 'podhook';
import { createTestReceiver, type TestReceiver } from 'podhook/testing';

let receiver: TestReceiver | undefined;
afterEach(() => receiver?.close());

it('retries a handler that failed, then the delivery is processed', async () => {
  let calls = 0;
  const pageOnCall = defineHandler('pod.backup.failed', async function pageOnCall(event, { log }) {
    calls += 1;
    if (calls === 1) throw new Error('pager unreachable');
    log.info({ error: event.payload.error }, 'paged');
  });
  receiver = await createTestReceiver({ handlers: [pageOnCall] });

  const answer = await receiver.deliver('pod.backup.failed', { error: 'disk_full' });
  expect(answer).toMatchObject({ status: 200, body: { received: true, duplicate: false } });
  await receiver.settle();

  const [row] = await receiver.deliveries();
  expect(row).toMatchObject({ event_type: 'pod.backup.failed', status: 'processed', attempts: 2, last_error: null });
  expect(await receiver.runs(row!.event_id)).toEqual([{ handler: 'pageOnCall', attempt: 2, outcome: 'succeeded', error: null }]);
  expect(receiver.logs().filter((l) => l.msg === 'paged')).toMatchObject([{ error: 'disk_full', attempt: 2 }]);
});
