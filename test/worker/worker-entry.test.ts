import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineHandler } from '../../src/core/events/define-handler.js';
import worker from './fixture-entry.js';
import { createD1Store } from '../../src/store/d1/d1-store.js';
import { newDelivery } from '../store/store-contract.js';
import { signDelivery, toRequest } from '../helpers/sign.js';
import { gatedHandler } from './gated-handler.js';
import { emptyD1, openWorkerTarget } from './worker-target.js';

const MINUTE = 60_000;
const fresh = () => signDelivery({ t: Math.floor(Date.now() / 1000) });
const ledger = async (eventId: string) =>
  (await createD1Store(env.DB).handlerRuns([eventId])).map((r) => `${r.handler}:${r.status}:${r.attempts}`).sort();

/** The handler runs the default export logged to the console (its logger's JSON lines). */
function watchHandlerRuns() {
  const log = vi.spyOn(console, 'log');
  return (eventId: string) =>
    log.mock.calls
      .map(([line]) => JSON.parse(String(line)) as Record<string, unknown>)
      .filter((r) => r.msg === 'handler run' && r.event_id === eventId)
      .map((r) => `${String(r.handler)}:${String(r.outcome)}:${String(r.attempt)}`);
}

describe('Worker entry (createWorker as src/worker/index.ts uses it, with a fixture registry)', () => {
  afterEach(() => vi.restoreAllMocks());

  it('stores a signed delivery in D1, answers 200, then runs its handlers in waitUntil', async () => {
    await emptyD1(env.DB);
    const handlerRuns = watchHandlerRuns();
    const d = fresh();
    const ctx = createExecutionContext();
    const res = await worker.fetch!(toRequest(d) as Request<unknown, IncomingRequestCfProperties>, env, ctx);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, event_id: d.eventId, duplicate: false });
    await waitOnExecutionContext(ctx);
    // No OpenTelemetry SDK is registered in this Worker: the tracing call sites are no-ops and no trace context is stored.
    expect(await createD1Store(env.DB).get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1, lastError: null, traceParent: null });
    expect(handlerRuns(d.eventId)).toEqual(['recordAll:succeeded:1']);
  });

  it('serves the same through the runtime (the deployed default export, wrangler.toml vars and binding)', async () => {
    await emptyD1(env.DB);
    const handlerRuns = watchHandlerRuns();
    expect(await (await exports.default.fetch('http://podhook.test/healthz')).json()).toEqual({ status: 'ok' });
    const ready = await exports.default.fetch('http://podhook.test/readyz');
    expect(await ready.json()).toEqual({ status: 'ready', checks: { store: 'ok', secret: 'ok' } });
    const d = fresh();
    const res = await exports.default.fetch(toRequest(d));
    expect(res.status).toBe(200);
    await vi.waitFor(async () => expect((await createD1Store(env.DB).get(d.eventId))?.status).toBe('processed'), { timeout: 5000 });
    expect(handlerRuns(d.eventId)).toEqual(['recordAll:succeeded:1']);
    // The signature is checked: a wrong secret stores nothing.
    const forged = signDelivery({ t: Math.floor(Date.now() / 1000), secret: 'not-the-secret' });
    expect((await exports.default.fetch(toRequest(forged))).status).toBe(401);
    expect(await createD1Store(env.DB).get(forged.eventId)).toBeNull();
  });

  it('answers 503 in the error shape when a variable is invalid, storing nothing', async () => {
    await emptyD1(env.DB);
    const ctx = createExecutionContext();
    const res = await worker.fetch!(toRequest(fresh()) as Request<unknown, IncomingRequestCfProperties>, { ...env, MAX_BODY_BYTES: 'lots' }, ctx);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('60');
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unavailable');
    expect(await createD1Store(env.DB).list()).toEqual([]);
  });
});

describe('Worker dispatch: waitUntil after ingest, cron for retries and retention', () => {
  let failuresLeft = 0;
  const flaky = defineHandler('pod.created', async function flaky() {
    if (failuresLeft-- > 0) throw new Error('downstream is down');
  });

  const scheduled = async (target: Awaited<ReturnType<typeof openWorkerTarget>>, scheduledTime: number) => {
    const ctx = createExecutionContext();
    await target.worker.scheduled!(createScheduledController({ scheduledTime, cron: '* * * * *' }), target.env, ctx);
    await waitOnExecutionContext(ctx);
  };

  it('answers before the handlers finish; waitUntil keeps them running to the end', async () => {
    const { handler: slow, started, release } = gatedHandler('pod.created');
    const t = await openWorkerTarget({ secrets: ['s'] }, { db: env.DB, handlers: [slow], vars: { DISPATCHER: 'on' } });
    const d = signDelivery({ secret: 's', t: Math.floor(t.now() / 1000) });
    const ctx = createExecutionContext();
    const res = await t.worker.fetch!(toRequest(d) as Request<unknown, IncomingRequestCfProperties>, t.env, ctx);
    expect(res.status).toBe(200);
    await vi.waitFor(() => expect(started.includes(d.eventId)).toBe(true), { timeout: 5000 });
    expect((await t.store.get(d.eventId))!.status).toBe('queued');
    release();
    await waitOnExecutionContext(ctx);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
  });

  it('retries a failed delivery on the cron once its retry time has come', async () => {
    failuresLeft = 1;
    const t = await openWorkerTarget({ secrets: ['s'] }, { db: env.DB, handlers: [flaky], vars: { DISPATCHER: 'on' } });
    t.setNow(Date.UTC(2026, 6, 1, 12, 3, 30));
    const d = signDelivery({ secret: 's', t: Math.floor(t.now() / 1000) });
    expect((await t.fetch(toRequest(d))).status).toBe(200);
    const failed = await t.store.get(d.eventId);
    expect(failed).toMatchObject({ status: 'failed', attempts: 1, lastError: 'flaky: Error: downstream is down' });
    expect(failed!.nextAttemptAt).toBeGreaterThan(t.now());

    // A cron run before the retry time leaves it alone; the next one after it runs it.
    await scheduled(t, t.now());
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'failed', attempts: 1 });
    t.setNow(failed!.nextAttemptAt!);
    await scheduled(t, t.now());
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 2, lastError: null });
    expect(await ledger(d.eventId)).toEqual(['flaky:succeeded:2']);
  });

  it('runs deliveries left queued (a waitUntil cut short) on the next cron run', async () => {
    failuresLeft = 0;
    const t = await openWorkerTarget({ secrets: ['s'] }, { db: env.DB, handlers: [flaky], vars: { DISPATCHER: 'on' } });
    const left = newDelivery();
    await t.store.claim([left]);
    t.setNow(left.receivedAt + 5_000);
    await scheduled(t, t.now());
    expect(await t.store.get(left.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
  });

  it('does not dispatch when DISPATCHER is off, on ingest or on the cron', async () => {
    const t = await openWorkerTarget({ secrets: ['s'] }, { db: env.DB, handlers: [flaky], vars: { DISPATCHER: 'off' } });
    const d = signDelivery({ secret: 's', t: Math.floor(t.now() / 1000) });
    expect((await t.fetch(toRequest(d))).status).toBe(200);
    await scheduled(t, t.now());
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'queued', attempts: 0 });
  });

  it('prunes rows older than RETENTION_DAYS on the minute-0 run only, keeping dead ones', async () => {
    const t = await openWorkerTarget({ secrets: ['s'] }, { db: env.DB, vars: { RETENTION_DAYS: '2' } });
    const old = newDelivery({ eventType: 'pod.unknown', status: 'ignored', lastError: 'unknown event type' });
    const oldDead = newDelivery({ status: 'dead', lastError: 'invalid_json' });
    await t.store.claim([old, oldDead]);
    const hour = Date.UTC(2026, 6, 1, 13, 0, 0);
    t.setNow(old.receivedAt + 3 * 86_400_000);
    await scheduled(t, hour + 5 * MINUTE);
    expect(await t.store.get(old.eventId)).not.toBeNull();
    await scheduled(t, hour);
    expect(await t.store.get(old.eventId)).toBeNull();
    expect(await t.store.get(oldDead.eventId)).toMatchObject({ status: 'dead' });
  });
});
