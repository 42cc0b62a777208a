// ctx.pods from a handler, through the dispatcher on a real SQLite store, against the emulator on
// 127.0.0.1: a call inside a step sends the step's key as its request id (the same on a rerun), a
// 429 parks the run until its retry_after, and a code the service refuses again makes it dead.
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/core/config.js';
import { createDispatcher } from '../../../src/core/dispatch/dispatcher.js';
import { createRouter } from '../../../src/core/dispatch/router.js';
import { defineHandler } from '../../../src/core/events/define-handler.js';
import { silentLogger } from '../../../src/core/observability/logger.js';
import { handlerPods } from '../../../src/core/pods/handler-pods.js';
import { createPodsAccess } from '../../../src/core/pods/pods-access.js';
import { PodsRateLimited } from '../../../src/core/pods/pods-error.js';
import { createStepSeal, storeJournals } from '../../../src/core/steps/index.js';
import { startEmulator, type RunningEmulator } from '../../../src/emulator/start-emulator.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';
import { newDelivery } from '../../store/store-contract.js';

const KEY = 'svc_test_key_0123456789';
const tempDir = useTempDir();
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(handle: Parameters<typeof defineHandler>[2], { handlerTimeoutMs = 30_000 } = {}) {
  const emu: RunningEmulator = await startEmulator({ apiKey: KEY, allowLocalUrls: true, seedPods: 1 });
  cleanups.push(() => emu.close());
  const opened = openSqliteStore(dbIn(tempDir()));
  cleanups.push(() => opened.close());
  let now = Date.now();
  const config = parseConfig({ SVC_BASE_URL: emu.url, SVC_API_KEY: KEY });
  const router = createRouter([defineHandler('pod.backup.failed', { name: 'diagnose' }, handle as never)]);
  const dispatcher = createDispatcher({
    store: opened.store, router, logger: silentLogger, clock: () => now, retryBaseMs: 1_000, random: () => 1, handlerTimeoutMs,
    steps: { journals: storeJournals(opened.store), seal: createStepSeal(null) },
    pods: createPodsAccess({ config: config.pods, store: opened.store, clock: () => now }),
  });
  const podId = emu.emulator.pods.all()[0]!.id;
  return { emu, ...opened, dispatcher, podId, advance: (ms: number) => (now += ms), now: () => now };
}

describe('ctx.pods from a handler', () => {
  it('queues an action once across runs: inside a step its request id is the step key, the same when a later step fails and the run is retried', async () => {
    let fails = 1;
    const t = await setup(async (_e: unknown, ctx: { step: Function; pods: { queueAction: Function } }) => {
      await ctx.step('queue diagnose', () => ctx.pods.queueAction(t.podId, 'diagnose'));
      await ctx.step('then', () => {
        if (fails-- > 0) throw new Error('later step fails once');
      });
    });
    const d = newDelivery({ receivedAt: t.now(), eventType: 'pod.backup.failed' });
    await t.store.claim([d]);
    await t.dispatcher.runUntilIdle();
    t.advance(60_000);
    await t.dispatcher.runUntilIdle();
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed' });
    const queued = t.emu.emulator.queuedActions();
    expect(queued).toHaveLength(1);
    const { stepIdempotencyKey } = await import('../../../src/core/steps/index.js');
    expect(queued[0]).toMatchObject({ action: 'diagnose', request_id: await stepIdempotencyKey(d.eventId, 'diagnose', 'queue diagnose') });
  });

  it.each([0, 14])('parks the run after a 429 with retry_after_seconds: 2 (its handler\'s time left is shorter), no attempt counted, until 2 s on, not later, after %i writes (47 item 7: it was 16 s after 14)', async (writesBefore) => {
    const t = await setup(async (_e: unknown, ctx: { step: Function; pods: { queueAction: Function } }) => {
      await ctx.step('queue restart', () => ctx.pods.queueAction(t.podId, 'restart'));
    }, { handlerTimeoutMs: 1_000 });
    // Writes made just before, by this process or another: their tokens are in use for a minute.
    if (writesBefore > 0) await t.store.takeRateTokens({ account: 'default', bucket: 'writes', capacity: 60, windowMs: 60_000, now: t.now(), count: writesBefore, maxWaitMs: 0 });
    t.emu.emulator.injectFault({ count: 1, status: 429, code: 'rate_limited', message: 'Too many requests.', details: { retry_after_seconds: 2 } });
    const d = newDelivery({ receivedAt: t.now(), eventType: 'pod.backup.failed' });
    await t.store.claim([d]);
    await t.dispatcher.runUntilIdle();
    const parked = await t.store.get(d.eventId);
    expect(parked).toMatchObject({ status: 'queued', attempts: 0 });
    // Due when the service's wait is over (a first token is back then).
    expect(parked!.nextAttemptAt! - t.now()).toBeGreaterThanOrEqual(2_000);
    expect(parked!.nextAttemptAt! - t.now()).toBeLessThanOrEqual(2_100);
    expect(t.emu.emulator.queuedActions()).toHaveLength(0);
    // Not before the bucket has a token again.
    t.advance(parked!.nextAttemptAt! - t.now() - 1);
    await t.dispatcher.runUntilIdle();
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'queued', attempts: 0 });
    t.advance(1);
    await t.dispatcher.runUntilIdle();
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1 });
    expect(t.emu.emulator.queuedActions()).toHaveLength(1);
  });

  it.each(['not_found', 'invalid_request', 'forbidden', 'capability_disabled', 'unauthorized'])('makes the delivery dead on %s, naming the code and the request id', async (code) => {
    const t = await setup(async (_e: unknown, ctx: { step: Function; pods: { queueAction: Function } }) => {
      await ctx.step('queue restart', () => ctx.pods.queueAction(t.podId, 'restart'));
    });
    t.emu.emulator.injectFault({ count: 1, status: 400, code, message: `refused: ${code}` });
    const d = newDelivery({ receivedAt: t.now(), eventType: 'pod.backup.failed' });
    await t.store.claim([d]);
    await t.dispatcher.runUntilIdle();
    const dead = await t.store.get(d.eventId);
    expect(dead).toMatchObject({ status: 'dead', attempts: 1 });
    expect(dead!.lastError).toMatch(new RegExp(`^diagnose: StepError: step "queue restart" \\(#1, attempt 1\\) failed: PodsError: ${code} in queueAction \\(request id st_[0-9a-f]{40}\\): refused: ${code}$`));
  });

  it('retries an internal error on the ladder, with the same request id', async () => {
    const t = await setup(async (_e: unknown, ctx: { step: Function; pods: { queueAction: Function } }) => {
      await ctx.step('queue restart', () => ctx.pods.queueAction(t.podId, 'restart'));
    });
    const seen: string[] = [];
    t.emu.emulator.injectFault({ count: 1, status: 500, code: 'internal', message: 'boom' });
    const d = newDelivery({ receivedAt: t.now(), eventType: 'pod.backup.failed' });
    await t.store.claim([d]);
    await t.dispatcher.runUntilIdle();
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'failed', attempts: 1 });
    t.advance(60_000);
    await t.dispatcher.runUntilIdle();
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 2 });
    const [queued] = t.emu.emulator.queuedActions();
    seen.push(queued!.request_id);
    const { stepIdempotencyKey } = await import('../../../src/core/steps/index.js');
    expect(seen).toEqual([await stepIdempotencyKey(d.eventId, 'diagnose', 'queue restart')]);
  });

  it('waits for its bucket at most half the handler\'s time left: a token due later parks the run before its request is sent, leaving the rest for the request', async () => {
    const emu = await startEmulator({ apiKey: KEY, seedPods: 1 });
    cleanups.push(() => emu.close());
    const opened = openSqliteStore(dbIn(tempDir()));
    cleanups.push(() => opened.close());
    const config = parseConfig({ SVC_BASE_URL: emu.url, SVC_API_KEY: KEY, SVC_WRITE_LIMIT: '1/2s' });
    const access = createPodsAccess({ config: config.pods, store: opened.store, clock: Date.now });
    const pods = (timeLeftMs: number) => handlerPods(access, { requestId: () => undefined, timeLeftMs: () => timeLeftMs, signal: new AbortController().signal });
    const podId = emu.emulator.pods.all()[0]!.id;
    // The bucket's one token, back 2 s after this call's answer.
    await pods(30_000).queueAction(podId, 'restart');
    // 3 s left: the token is further off than half of them, so nothing is sent and the run would park.
    const parked = await pods(3_000).queueAction(podId, 'restart').catch((e: unknown) => e);
    expect(parked).toBeInstanceOf(PodsRateLimited);
    expect(emu.emulator.queuedActions()).toHaveLength(1);
    // 5 s left: half of them covers the wait, and the call waits for its token.
    await pods(5_000).queueAction(podId, 'restart');
    expect(emu.emulator.queuedActions()).toHaveLength(2);
    expect(emu.emulator.bucketCounts().writes.refused).toBe(0);
  });
});
