import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { DeliveryStore } from '../../../src/core/delivery-store.js';
import { createDispatcher, type DispatcherOptions } from '../../../src/core/dispatch/dispatcher.js';
import { createRouter, defineHandler, type HandlerDefinition } from '../../../src/index.js';
import { createPodhookMetrics } from '../../../src/core/observability/podhook-metrics.js';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { captureLogger } from '../../helpers/capture-logger.js';
import { dbIn, useTempDir } from '../../helpers/temp-dir.js';
import { newDelivery } from '../../store/store-contract.js';

const tempDir = useTempDir();

function setup(handlers: HandlerDefinition[], options: Partial<DispatcherOptions> = {}, path = dbIn(tempDir())) {
  let now = 1_790_000_000_000;
  const opened = openSqliteStore(path);
  const log = captureLogger();
  const dispatcher = createDispatcher({
    store: opened.store,
    router: createRouter(handlers),
    logger: log.logger,
    clock: () => now,
    random: () => 0.5,
    retryBaseMs: 1000,
    ...options,
  });
  const ingest = async (overrides: Parameters<typeof newDelivery>[0] = {}) => {
    const d = newDelivery({ receivedAt: now, ...overrides });
    await opened.store.claim([d]);
    return d;
  };
  return {
    store: opened.store as DeliveryStore,
    dispatcher,
    log,
    ingest,
    advance: (ms: number) => (now += ms),
    close: opened.close,
  };
}

describe('dispatcher', () => {
  it('runs each handler once per event, however many copies arrived', async () => {
    const calls: string[] = [];
    const t = setup([defineHandler('pod.created', { name: 'count' }, (e) => void calls.push(e.id))]);
    const d = await t.ingest();
    await t.store.claim([{ ...d }, { ...d }]); // the sender's retries
    await t.dispatcher.runUntilIdle();
    await t.dispatcher.runUntilIdle();
    expect(calls).toEqual([d.eventId]);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1, deliveryCount: 3, lastError: null });
    t.close();
  });

  it('retries only the failed handler: fails twice, then succeeds; its sibling runs once', async () => {
    const flaky: number[] = [];
    const sibling: number[] = [];
    const t = setup([
      defineHandler('pod.created', { name: 'flaky' }, (e) => {
        flaky.push(e.attempt);
        if (e.attempt < 3) throw new Error(`boom ${e.attempt}`);
      }),
      defineHandler('pod.created', { name: 'sibling' }, (e) => void sibling.push(e.attempt)),
    ]);
    const d = await t.ingest();
    await t.dispatcher.runUntilIdle();
    const afterFirst = await t.store.get(d.eventId);
    expect(afterFirst).toMatchObject({ status: 'failed', attempts: 1, lastError: 'flaky: Error: boom 1' });
    // Backoff with random pinned to 0.5: base 1000 ms → 750 ms after the first failure.
    expect(afterFirst!.nextAttemptAt! - 1_790_000_000_000).toBe(750);
    await t.dispatcher.runUntilIdle(); // not due yet
    expect(flaky).toEqual([1]);
    t.advance(750);
    await t.dispatcher.runUntilIdle();
    expect((await t.store.get(d.eventId))!.nextAttemptAt! - (1_790_000_000_000 + 750)).toBe(1500);
    t.advance(1500);
    await t.dispatcher.runUntilIdle();
    expect(flaky).toEqual([1, 2, 3]);
    expect(sibling).toEqual([1]);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 3, lastError: null });
    expect((await t.store.handlerRuns([d.eventId])).map((r) => [r.handler, r.status, r.attempts]).sort()).toEqual([
      ['flaky', 'succeeded', 3],
      ['sibling', 'succeeded', 1],
    ]);
    t.close();
  });

  it('ends a handler that always throws as dead after the maximum attempts, with the last error', async () => {
    let runs = 0;
    const t = setup([defineHandler('pod.created', { name: 'broken' }, () => {
      runs++;
      throw new TypeError(`nope ${runs}`);
    })], { maxAttempts: 3 });
    const d = await t.ingest();
    for (let i = 0; i < 5; i++) {
      await t.dispatcher.runUntilIdle();
      t.advance(60_000);
    }
    expect(runs).toBe(3);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'dead', attempts: 3, lastError: 'broken: TypeError: nope 3', nextAttemptAt: null });
    expect(t.log.records().some((r) => r.msg === 'delivery dead' && r.event_id === d.eventId)).toBe(true);
    t.close();
  });

  it('cuts a hanging handler at its time limit and aborts its signal', async () => {
    let signal: AbortSignal | undefined;
    const t = setup([defineHandler('pod.created', { name: 'hangs', timeoutMs: 50 }, (_e, ctx) => {
      signal = ctx.signal;
      return new Promise(() => {}); // never settles
    })]);
    const d = await t.ingest();
    await t.dispatcher.runUntilIdle(); // returns although the handler never settles
    expect(signal?.aborted).toBe(true);
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'failed', lastError: 'hangs: HandlerTimeoutError: timed out after 50 ms' });
    const line = t.log.records().find((r) => r.msg === 'handler run');
    expect(line).toMatchObject({ handler: 'hangs', event_id: d.eventId, attempt: 1, outcome: 'timeout' });
    t.close();
  });

  it('gives a handler that first reads its signal after the time limit an aborted one', async () => {
    let late: { aborted: boolean; reason: unknown } | undefined;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const t = setup([
      defineHandler('pod.created', { name: 'late', timeoutMs: 30 }, async (_e, ctx) => {
        await gate; // held past its time limit
        late = { aborted: ctx.signal.aborted, reason: ctx.signal.reason };
      }),
    ]);
    const d = await t.ingest();
    await t.dispatcher.runUntilIdle(); // the time limit ended the call
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'failed', lastError: 'late: HandlerTimeoutError: timed out after 30 ms' });
    release();
    await vi.waitFor(() => expect(late).toBeDefined());
    expect(late?.aborted).toBe(true);
    expect(String(late?.reason)).toMatch(/timed out after 30 ms/);
    t.close();
  });

  it('aborts running handlers at shutdown once the grace period is over, and burns no attempt', async () => {
    let signal: AbortSignal | undefined;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const t = setup([defineHandler('pod.created', { name: 'slow' }, (_e, ctx) => {
      signal = ctx.signal;
      started();
      return new Promise(() => {}); // ignores its signal
    })]);
    const d = await t.ingest();
    t.dispatcher.wake();
    await running;
    await t.dispatcher.stop(50);
    expect(signal?.aborted).toBe(true);
    expect(String(signal?.reason)).toMatch(/shutting down/);
    expect(t.log.records().some((r) => r.msg === 'handlers still running at shutdown: aborting them')).toBe(true);
    expect(t.log.records().find((r) => r.msg === 'handler run')).toMatchObject({ handler: 'slow', outcome: 'interrupted' });
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'queued', attempts: 0, lastError: null });
    t.close();
  });

  it('runs a handler interrupted by shutdown again on the next start, at the same attempt, with its retry count intact', async () => {
    const path = dbIn(tempDir());
    const attemptsSeen: number[] = [];
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const hangs = defineHandler('pod.created', { name: 'h' }, (e) => {
      attemptsSeen.push(e.attempt);
      started();
      return new Promise(() => {});
    });
    const metricsStore = openSqliteStore(path);
    const metrics = createPodhookMetrics(metricsStore.store);
    const first = setup([hangs], { owner: 'first', maxAttempts: 2, instruments: [metrics.instrument] }, path);
    const d = await first.ingest();
    first.dispatcher.wake();
    await running;
    await first.dispatcher.stop(10);
    first.close();
    const text = await metrics.registry.render();
    expect(text).toContain('podhook_handler_runs_total{handler="h",outcome="interrupted"} 1');
    expect(text).not.toContain('podhook_handler_failures_total{handler="h"}');
    expect(text).not.toContain('podhook_dispatch_outcomes_total{');
    metricsStore.close();

    // The restarted process, same file: the delivery is still due and nothing was counted.
    const finished: unknown[] = [];
    const second = setup(
      [defineHandler('pod.created', { name: 'h' }, (e) => void attemptsSeen.push(e.attempt))],
      { owner: 'second', maxAttempts: 2, instruments: [{ subscriber: { deliveryFinished: (...args) => void finished.push(args) } }] },
      path,
    );
    expect(await second.store.get(d.eventId)).toMatchObject({ status: 'queued', attempts: 0 });
    expect((await second.store.handlerRuns([d.eventId])).length).toBe(0);
    await second.dispatcher.runUntilIdle();
    expect(attemptsSeen).toEqual([1, 1]);
    expect(await second.store.get(d.eventId)).toMatchObject({ status: 'processed', attempts: 1, lastError: null });
    expect(finished).toEqual([['pod.created', 'processed', { eventId: d.eventId, attempt: 1, failures: [] }]]);
    second.close();
  });

  it('keeps a failed delivery due with its attempt count when a retry is interrupted by shutdown', async () => {
    const path = dbIn(tempDir());
    let calls = 0;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const t = setup([defineHandler('pod.created', { name: 'h' }, () => {
      calls++;
      if (calls === 1) throw new Error('first fails');
      started();
      return new Promise(() => {});
    })], { maxAttempts: 2 }, path);
    const d = await t.ingest();
    await t.dispatcher.runUntilIdle();
    const failed = await t.store.get(d.eventId);
    expect(failed).toMatchObject({ status: 'failed', attempts: 1, lastError: 'h: Error: first fails' });
    t.advance(60_000);
    t.dispatcher.wake();
    await running;
    await t.dispatcher.stop(10);
    // Without the rule this second attempt would have made it dead (maxAttempts 2).
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'failed', attempts: 1, lastError: 'h: Error: first fails', nextAttemptAt: failed!.nextAttemptAt });
    expect((await t.store.handlerRuns([d.eventId])).map((r) => [r.handler, r.status, r.attempts])).toEqual([['h', 'failed', 1]]);
    t.close();
  });

  it('tells its subscribers which handlers failed, with the attempt', async () => {
    const seen: unknown[] = [];
    const t = setup(
      [
        defineHandler('pod.created', { name: 'bad' }, () => {
          throw new Error('no');
        }),
        defineHandler('pod.created', { name: 'good' }, () => {}),
      ],
      { instruments: [{ subscriber: { deliveryFinished: (...args) => void seen.push(args) } }] },
    );
    const d = await t.ingest();
    const other = await t.ingest({ eventType: 'pod.backup.completed' });
    await t.dispatcher.runUntilIdle();
    expect(seen).toContainEqual(['pod.created', 'failed', { eventId: d.eventId, attempt: 1, failures: [{ handler: 'bad', error: 'Error: no' }] }]);
    expect(seen).toContainEqual(['pod.backup.completed', 'ignored', { eventId: other.eventId, attempt: 0, failures: [] }]);
    t.close();
  });

  it('marks a payload that fails the handler schema dead with the validation error, without running it', async () => {
    let ran = false;
    const schema = z.looseObject({ pod_id: z.string() });
    const t = setup([defineHandler('pod.created', { name: 'strict', schema }, () => void (ran = true))]);
    const d = await t.ingest({ body: new TextEncoder().encode('{"pod_id": 42}') });
    await t.dispatcher.runUntilIdle();
    expect(ran).toBe(false);
    const row = await t.store.get(d.eventId);
    expect(row?.status).toBe('dead');
    expect(row?.lastError).toMatch(/^strict: invalid_payload: pod_id: /);
    t.close();
  });

  it('gives the handler the event id, type, t, received time, parsed payload, raw body, attempt and a bound logger', async () => {
    let seen: unknown;
    const t = setup([defineHandler('pod.created', async function inspect(event, { log, signal }) {
      log.info({ step: 'inside' }, 'custom');
      seen = { ...event, signalAborted: signal.aborted };
    })]);
    const d = await t.ingest({ body: new TextEncoder().encode('{"pod":{"id":"p1"}}') });
    await t.dispatcher.runUntilIdle();
    expect(seen).toEqual({
      id: d.eventId,
      type: 'pod.created',
      signatureTimestamp: d.signatureT,
      receivedAt: new Date(d.receivedAt),
      payload: { pod: { id: 'p1' } },
      rawBody: d.body,
      attempt: 1,
      signalAborted: false,
    });
    expect(t.log.records().find((r) => r.msg === 'custom')).toMatchObject({ event_id: d.eventId, handler: 'inspect', attempt: 1 });
    const run = t.log.records().find((r) => r.msg === 'handler run');
    expect(run).toMatchObject({ handler: 'inspect', event_id: d.eventId, attempt: 1, outcome: 'succeeded' });
    expect(typeof run!.duration_ms).toBe('number');
    t.close();
  });

  it('routes to wildcards and marks types nobody handles as ignored', async () => {
    const seen: string[] = [];
    const t = setup([defineHandler('pod.backup.*', { name: 'backups' }, (e) => void seen.push(e.type))]);
    const ok = await t.ingest({ eventType: 'pod.backup.completed' });
    const failed = await t.ingest({ eventType: 'pod.backup.failed' });
    const other = await t.ingest({ eventType: 'pod.created' });
    await t.dispatcher.runUntilIdle();
    expect(seen.sort()).toEqual(['pod.backup.completed', 'pod.backup.failed']);
    expect((await t.store.get(ok.eventId))!.status).toBe('processed');
    expect((await t.store.get(failed.eventId))!.status).toBe('processed');
    expect(await t.store.get(other.eventId)).toMatchObject({ status: 'ignored', lastError: 'no handler for this event type' });
    t.close();
  });

  it('leases at most `budget` deliveries over one runUntilIdle (a Worker invocation\'s page), concurrency or not, and leaves the rest due', async () => {
    const ran: string[] = [];
    const t = setup([defineHandler('pod.created', { name: 'count' }, (e) => void ran.push(e.id))], { concurrency: 3 });
    const ids = [];
    for (let i = 0; i < 10; i++) ids.push((await t.ingest()).eventId);
    await t.dispatcher.runUntilIdle(7);
    expect(ran).toHaveLength(7);
    expect(await t.store.list({ status: 'queued', limit: 100 })).toHaveLength(3);
    await t.dispatcher.runUntilIdle(0);
    expect(ran).toHaveLength(7);
    // No budget: whatever is due.
    await t.dispatcher.runUntilIdle();
    expect(ran.sort()).toEqual(ids.sort());
    t.close();
  });

  it('never lets two dispatchers on one file run the same handler at once', async () => {
    const path = dbIn(tempDir());
    const running = new Set<string>();
    const calls: string[] = [];
    let overlap = false;
    const handler = defineHandler('pod.created', { name: 'slow' }, async (e) => {
      if (running.has(e.id)) overlap = true;
      running.add(e.id);
      calls.push(e.id);
      await new Promise((r) => setTimeout(r, 5));
      running.delete(e.id);
    });
    const a = setup([handler], { owner: 'a', concurrency: 4 }, path);
    const b = setup([handler], { owner: 'b', concurrency: 4 }, path);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await a.ingest()).eventId);
    await Promise.all([a.dispatcher.runUntilIdle(), b.dispatcher.runUntilIdle()]);
    expect(overlap).toBe(false);
    expect(calls.sort()).toEqual(ids.sort());
    a.close();
    b.close();
  });

  it('picks up deliveries whose lease expired (a dispatcher died mid-run)', async () => {
    const calls: string[] = [];
    const t = setup([defineHandler('pod.created', { name: 'h' }, (e) => void calls.push(e.id))]);
    const d = await t.ingest();
    // A dead process leased it and never finished.
    expect(await t.store.leaseDue({ owner: 'dead-process', now: 1_790_000_000_000, leaseMs: 60_000, limit: 10 })).toHaveLength(1);
    await t.dispatcher.runUntilIdle();
    expect(calls).toEqual([]);
    t.advance(60_001);
    await t.dispatcher.runUntilIdle();
    expect(calls).toEqual([d.eventId]);
    t.close();
  });

  it('stops within its grace period, aborting a handler that does not finish, and gives the lease back', async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const t = setup([defineHandler('pod.created', { name: 'stuck' }, () => {
      started();
      return new Promise(() => {});
    })]);
    const d = await t.ingest();
    t.dispatcher.wake();
    await running;
    await t.dispatcher.stop(100);
    const row = await t.store.get(d.eventId);
    expect(row?.status).toBe('queued');
    expect((await t.store.leaseDue({ owner: 'next', now: row!.nextAttemptAt!, leaseMs: 1000, limit: 1 })).map((x) => x.eventId)).toEqual([d.eventId]);
    t.close();
  });

  it('logs one error per store outage while it cannot lease, not one per poll, and one line when it can again', async () => {
    let down = true;
    const path = dbIn(tempDir());
    const real = openSqliteStore(path);
    const flaky: DeliveryStore = { ...real.store, leaseDue: (o) => (down ? Promise.reject(new Error('connection refused')) : real.store.leaseDue(o)) };
    const t = setup([defineHandler('pod.created', { name: 'h' }, () => {})], { store: flaky }, path);
    const d = await t.ingest();
    for (let i = 0; i < 5; i++) await t.dispatcher.runUntilIdle();
    const lines = () => t.log.records().map((r) => r.msg);
    expect(lines().filter((m) => m === 'dispatcher could not lease deliveries')).toHaveLength(1);
    down = false;
    await t.dispatcher.runUntilIdle();
    expect(await t.store.get(d.eventId)).toMatchObject({ status: 'processed' });
    expect(t.log.records().filter((r) => r.msg === 'dispatcher can lease deliveries again')).toMatchObject([{ failed_tries: 5 }]);
    await t.dispatcher.stop();
    t.close();
    real.close();
  });
});
