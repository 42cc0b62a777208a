// The Worker's drains bounded per invocation (issue 46): runs parked on a 90 s sleep that come due
// together are woken a page per cron run (WORKER_CRON_PAGE), each run within D1's queries per
// invocation, the rest the next minute; a webhook request's drain takes its own delivery and at
// most WORKER_REQUEST_PAGE of them. All complete, none twice. 200 runs here; the bench
// (bench/worker-parked.ts) parks 1,000 in a deployed bundle and times webhooks meanwhile.
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { defineHandler } from '../../src/core/events/define-handler.js';
import { WORKER_CRON_CONCURRENCY, WORKER_CRON_PAGE, WORKER_REQUEST_PAGE } from '../../src/worker/worker-runtime.js';
import { handlers, resetStepNotes, stepNotes } from '../fixtures/step-handlers.js';
import { signDelivery, toRequest, TEST_SECRET } from '../helpers/sign.js';
import { newDelivery } from '../store/store-contract.js';
import { countingD1 } from './counting-d1.js';
import { openWorkerTarget } from './worker-target.js';

const PARKED = 200;
/** D1's queries per Worker invocation on Workers Paid (Free allows 50). */
const D1_QUERIES_PER_INVOCATION = 1_000;

describe('bounded drains on the Worker (D1 in workerd)', () => {
  it(`wakes ${PARKED} runs parked on a 90 s sleep a page per cron run, each run well within D1's queries per invocation, all once`, { timeout: 120_000 }, async () => {
    resetStepNotes();
    const d1 = countingD1(env.DB);
    const t = await openWorkerTarget({ secrets: [TEST_SECRET] }, { db: d1.db, handlers, vars: { DISPATCHER: 'on' } });
    const post = async (body: Record<string, unknown>, eventType = 'pod.backup.failed') => {
      const d = signDelivery({ t: Math.floor(t.now() / 1000), eventType, body });
      const ctx = createExecutionContext();
      const res = await t.worker.fetch!(toRequest(d) as Request<unknown, IncomingRequestCfProperties>, t.env, ctx);
      await waitOnExecutionContext(ctx);
      expect(res.status).toBe(200);
      return d.eventId;
    };
    const ids: string[] = [];
    for (let i = 0; i < PARKED; i++) ids.push(await post({ sleep: '90s', n: i }));
    const noted = (what: string) => stepNotes().filter((n) => n.what === what && ids.includes(n.id)).map((n) => n.id);
    expect(noted('before')).toHaveLength(PARKED);
    expect(noted('after-sleep')).toHaveLength(0);

    // Two minutes on, every one of them is due at once.
    t.setNow(t.now() + 120_000);
    // A webhook request meanwhile: its own delivery, and at most a small page of the due runs.
    d1.take();
    const own = await post({}, 'pod.created');
    expect(stepNotes().filter((n) => n.id === own && n.what === 'three')).toHaveLength(1);
    expect(noted('after-sleep')).toHaveLength(WORKER_REQUEST_PAGE);
    const request = d1.take();

    const crons: Array<{ woken: number; roundTrips: number; statements: number }> = [];
    while (noted('after').length < PARKED && crons.length < 10) {
      const before = noted('after-sleep').length;
      d1.take();
      const ctx = createExecutionContext();
      await t.worker.scheduled!(createScheduledController({ scheduledTime: t.now(), cron: '* * * * *' }), t.env, ctx);
      await waitOnExecutionContext(ctx);
      const { roundTrips, statements } = d1.take();
      crons.push({ woken: noted('after-sleep').length - before, roundTrips, statements });
      t.setNow(t.now() + 60_000);
    }

    // A page per cron run, the rest the next minute.
    expect(crons.map((c) => c.woken)).toEqual([WORKER_CRON_PAGE, WORKER_CRON_PAGE, WORKER_CRON_PAGE, PARKED - WORKER_REQUEST_PAGE - 3 * WORKER_CRON_PAGE]);
    // Every statement counted (those of a batch too): each run stays under half of what D1 allows.
    for (const c of crons) expect(c.statements).toBeLessThanOrEqual(D1_QUERIES_PER_INVOCATION / 2);
    expect(request.statements).toBeLessThanOrEqual(D1_QUERIES_PER_INVOCATION / 10);
    // All complete, none twice.
    expect(noted('after-sleep').sort()).toEqual([...ids].sort());
    expect(noted('after').sort()).toEqual([...ids].sort());
    for (const id of ids.slice(0, 20)) expect(await t.store.get(id)).toMatchObject({ status: 'processed', attempts: 1 });
    expect(await t.store.list({ status: 'queued', limit: 10 })).toEqual([]);
    console.info(`D1 per cron run (woken, round trips, statements): ${JSON.stringify(crons)}; the webhook request: ${request.roundTrips} round trips, ${request.statements} statements`);
  });

  it(`runs at most WORKER_CRON_CONCURRENCY handlers at once in a cron run (D1 answers one query at a time: webhooks wait behind what the cron has in flight)`, async () => {
    let running = 0;
    let most = 0;
    const busy = defineHandler('pod.created', async function busy() {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 2)); // I/O of its own: the next run may start meanwhile
      running--;
    });
    const t = await openWorkerTarget({ secrets: [TEST_SECRET] }, { handlers: [busy], vars: { DISPATCHER: 'on' } });
    const due = Array.from({ length: 12 }, () => newDelivery({ receivedAt: t.now() - 1_000 }));
    await t.store.claim(due);
    const ctx = createExecutionContext();
    await t.worker.scheduled!(createScheduledController({ scheduledTime: t.now(), cron: '* * * * *' }), t.env, ctx);
    await waitOnExecutionContext(ctx);
    expect(await t.store.list({ status: 'processed', limit: 100 })).toHaveLength(12);
    expect(most).toBe(WORKER_CRON_CONCURRENCY);
  });
});
