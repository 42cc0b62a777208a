// ctx.waitForEvent on the Worker, on D1 in workerd (issue 48 §2): a run parked at a wait is woken
// by the request that brings its match (its ingest, under that request's waitUntil), and by the
// cron trigger's run once its timeout passed. The wait-handlers fixture keeps what each run got in
// this isolate's memory.
import { describe, expect, it } from 'vitest';
import { awaitRenewal, orderFields, resetWaitNotes, waitNotes } from '../fixtures/wait-handlers.js';
import { signDelivery, toRequest, TEST_SECRET } from '../helpers/sign.js';
import { openWorkerTarget, runCron } from './worker-target.js';

const MINUTE = 60_000;

async function open() {
  resetWaitNotes();
  const t = await openWorkerTarget({ secrets: [TEST_SECRET] }, { handlers: [awaitRenewal], payloads: { orderFields }, vars: { DISPATCHER: 'on' } });
  const post = async (eventType: string, body: Record<string, unknown>) => {
    const d = signDelivery({ t: Math.floor(t.now() / 1000), eventType, body: { ...body, n: crypto.randomUUID() } });
    expect((await t.fetch(toRequest(d))).status).toBe(200);
    return d.eventId;
  };
  const got = (id: string) => waitNotes().filter((n) => n.id === id).map((n) => n.got);
  return { t, post, got };
}

describe('ctx.waitForEvent on the Worker (D1 in workerd)', () => {
  it('the request that brings the match wakes the parked run, which gets it, once', async () => {
    const { t, post, got } = await open();
    const pod = crypto.randomUUID();
    const waiting = await post('pod.renewal_failed', { pod: { id: pod } });
    expect(got(waiting)).toEqual([]);
    const [run] = await t.store.parkedRuns([waiting]);
    expect(run).toMatchObject({ handler: 'awaitRenewal', step: 'renewed', waitingFor: { types: ['pod.renewed'], podId: pod } });
    // A later request, about another pod: no wake.
    t.setNow(t.now() + 1_000);
    await post('pod.renewed', { pod: { id: crypto.randomUUID() } });
    expect(got(waiting)).toEqual([]);
    const match = await post('pod.renewed', { pod: { id: pod } });
    expect(got(waiting)).toEqual([match]);
    expect(await t.store.get(waiting)).toMatchObject({ status: 'processed' });
    expect(await t.store.waitsOf([waiting])).toEqual([]);
    // A later cron finds nothing more to run.
    t.setNow(t.now() + 2 * MINUTE);
    await runCron(t);
    expect(got(waiting)).toEqual([match]);
  });

  it("the cron's run after the timeout wakes the run, which gets null; one before it does not", async () => {
    const { t, post, got } = await open();
    const started = t.now();
    const waiting = await post('pod.renewal_failed', { pod: { id: crypto.randomUUID() }, timeout: '5m' });
    t.setNow(started + 2 * MINUTE);
    await runCron(t);
    expect(got(waiting)).toEqual([]);
    expect(await t.store.get(waiting)).toMatchObject({ status: 'queued', nextAttemptAt: started + 5 * MINUTE });
    t.setNow(started + 6 * MINUTE);
    await runCron(t);
    expect(got(waiting)).toEqual([null]);
    expect(await t.store.get(waiting)).toMatchObject({ status: 'processed' });
  });
});
