import { retryDelayMs } from './backoff.js';
import { createBatcher } from '../batcher.js';
import { systemClock, type Clock } from '../clock.js';
import type { Delivery, DeliveryStore, DispatchOutcome, HandlerRun } from '../delivery-store.js';
import { storedDelivery, type LeaseGrant, type NewDelivery } from '../delivery.js';
import type { Logger } from '../observability/logger.js';
import type { Router } from './router.js';
import { attemptDuration, createHandlerRunner, describeFailures, ledgerRuns, parseDeliveryBody, type HandlerObserver } from './run-handler.js';

/** Hooks for metrics; every method optional. */
export interface DispatchObserver extends HandlerObserver {
  deliveryFinished?(
    eventType: string,
    status: DispatchOutcome['status'],
    detail: { eventId: string; attempt: number; failures: ReadonlyArray<{ handler: string; error: string }> },
  ): void;
}

export interface DispatcherOptions {
  store: DeliveryStore;
  router: Router;
  logger: Logger;
  clock?: Clock;
  /** This dispatcher's lease owner id. */
  owner?: string;
  /** Dispatch attempts before a delivery is `dead` (default 8). */
  maxAttempts?: number;
  /** Time limit per handler call, unless the handler sets its own (default 30 s). */
  handlerTimeoutMs?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Deliveries whose handlers run at once (default 16). */
  concurrency?: number;
  /**
   * Hand-offs that may wait in memory for a free slot, already leased by their insert (default
   * 8 × concurrency). Beyond it a new delivery is stored unleased and drained by a lease statement.
   */
  handOffQueue?: number;
  random?: () => number;
  observer?: DispatchObserver;
  /** How completion writes are deferred to share a transaction (Node: setImmediate). */
  schedule?: (flush: () => void) => void;
}

export interface Dispatcher {
  /** Asks for a drain soon (after an ingest commit, on a timer); calls coalesce. */
  wake(): void;
  /** Drains every due delivery and waits for their handlers (the Worker's cron and waitUntil). */
  runUntilIdle(): Promise<void>;
  /** Stops leasing, waits for in-flight handlers up to `graceMs`, then gives back unfinished leases. */
  stop(graceMs?: number): Promise<void>;
  /**
   * Hand-off: reserves a dispatch slot and a lease for a delivery about to be claimed, or null at
   * capacity. After the claim, `adopt` it (stored as new) or `release` it (anything else).
   */
  reserve(): LeaseGrant | null;
  /** Runs a just-claimed delivery under its reserved lease (no lease statement, no ledger read). */
  adopt(grant: LeaseGrant, delivery: NewDelivery): void;
  release(grant: LeaseGrant): void;
  readonly owner: string;
}

/**
 * Drains the durable inbox: leases due deliveries, runs the handlers that have not yet
 * succeeded for each (the per-handler ledger), and records the outcome with retries,
 * exponential backoff with jitter, a time limit per call and dead letters.
 */
export function createDispatcher({
  store,
  router,
  logger,
  clock = systemClock,
  owner = `dispatcher-${crypto.randomUUID()}`,
  maxAttempts = 8,
  handlerTimeoutMs = 30_000,
  retryBaseMs = 2_000,
  retryMaxMs = 15 * 60_000,
  concurrency = 16,
  handOffQueue = concurrency * 8,
  random = Math.random,
  observer = {},
  schedule,
}: DispatcherOptions): Dispatcher {
  const longestTimeout = Math.max(handlerTimeoutMs, ...router.handlers.map((h) => h.timeoutMs ?? 0));
  // A lease outlives the longest handler run, so no other dispatcher starts the same handler.
  const leaseMs = longestTimeout + 5_000;
  const complete = createBatcher<DispatchOutcome, void>({
    execute: async (batch) => {
      await store.completeDispatch(batch);
      return batch.map(() => undefined);
    },
    schedule,
  });

  const runner = createHandlerRunner({ logger, clock, handlerTimeoutMs, observer });
  /** Every dispatch not yet finished, its outcome write included (stop and runUntilIdle wait for these). */
  const inflight = new Set<Promise<void>>();
  /** Dispatches whose handlers are running: what `concurrency` bounds. */
  let running = 0;
  /** Hand-offs adopted while every slot was busy, in arrival order, with their lease's end. */
  const waiting: Array<{ delivery: Delivery; payload: unknown; until: number }> = [];
  let reserved = 0;
  /** A drain stopped at capacity: deliveries may be waiting for a free slot. */
  let backlog = false;
  let stopped = false;

  function track(delivery: Delivery, ledger: HandlerRun[], payload?: unknown) {
    running++;
    let freed = false;
    // The slot frees when the handlers are done; the outcome write that follows needs none.
    const free = () => {
      if (freed) return;
      freed = true;
      running--;
      pump();
    };
    const p: Promise<void> = dispatchOne(delivery, ledger, payload, free)
      .catch((error: Error) => logger.error({ event_id: delivery.eventId, err: error.message }, 'dispatch failed'))
      .finally(() => {
        free();
        inflight.delete(p);
      });
    inflight.add(p);
  }

  /** Fills free slots: hand-offs waiting in memory first, then (backlog) a drain of the store. */
  function pump() {
    while (!stopped && running < concurrency && waiting.length > 0) {
      const next = waiting.shift()!;
      // Its lease must cover the longest handler run from now; one that waited too long is left
      // to expire and is leased again like any due delivery.
      if (next.until - clock() < longestTimeout) continue;
      track(next.delivery, [], next.payload);
    }
    if (backlog && running < concurrency) {
      backlog = false;
      void wake();
    }
  }

  /** Leases and starts due deliveries until none is left; resolves with how many it started. */
  async function drain(): Promise<number> {
    let started = 0;
    while (!stopped) {
      const slots = concurrency - running - waiting.length - reserved;
      if (slots <= 0) {
        backlog = true; // the next dispatch to finish drains again
        return started;
      }
      let leased: Delivery[];
      let ledger: HandlerRun[];
      try {
        leased = await store.leaseDue({ owner, now: clock(), leaseMs, limit: slots });
        if (leased.length === 0) return started;
        // Ledger rows exist only once an attempt has failed: new deliveries need no read.
        const retried = leased.filter((d) => d.attempts > 0).map((d) => d.eventId);
        ledger = retried.length > 0 ? await store.handlerRuns(retried) : [];
      } catch (error) {
        // Leases taken expire by themselves; the next wake or poll tries again.
        logger.error({ err: (error as Error).message }, 'dispatcher could not lease deliveries');
        return started;
      }
      for (const delivery of leased) {
        track(delivery, ledger.filter((r) => r.eventId === delivery.eventId));
        started++;
      }
    }
    return started;
  }

  async function dispatchOne(delivery: Delivery, ledger: HandlerRun[], parsed: unknown, free: () => void): Promise<void> {
    const now = () => clock();
    const handlers = router.handlersFor(delivery.eventType);
    const base = { eventId: delivery.eventId, owner, nextAttemptAt: null, runs: [] as HandlerRun[] };
    if (handlers.length === 0) {
      free();
      await finish({ ...base, status: 'ignored', attempts: delivery.attempts, lastError: 'no handler for this event type', now: now() }, delivery);
      return;
    }
    const body = parsed !== undefined ? { ok: true as const, payload: parsed } : parseDeliveryBody(delivery.body);
    if (!body.ok) {
      free();
      await finish({ ...base, status: 'dead', attempts: delivery.attempts, lastError: body.error, now: now() }, delivery);
      return;
    }

    // A first attempt (no ledger) runs every handler; a retry skips the ones that succeeded.
    const pending =
      ledger.length === 0 ? handlers : handlers.filter((h) => !ledger.some((r) => r.handler === h.name && r.status === 'succeeded'));
    const results = await Promise.all(
      pending.map((h) => runner.run(h, delivery, body.payload, (ledger.find((r) => r.handler === h.name)?.attempts ?? 0) + 1)),
    );
    free();

    const failures = results.filter((r) => !r.ok);
    // The ledger matters once an attempt has failed. A delivery processed at its first attempt
    // needs no rows: its status already says every handler succeeded (and ingest stays lean).
    const runs: HandlerRun[] = failures.length === 0 && ledger.length === 0 ? [] : ledgerRuns(delivery.eventId, results);
    const attempts = delivery.attempts + 1;
    const lastError = describeFailures(results);
    const durationMs = attemptDuration(results);
    let outcome: DispatchOutcome;
    if (failures.length === 0) {
      outcome = { ...base, runs, durationMs, status: 'processed', attempts, lastError: null, now: now() };
    } else if (failures.some((f) => f.permanent) || attempts >= maxAttempts) {
      outcome = { ...base, runs, durationMs, status: 'dead', attempts, lastError, now: now() };
    } else {
      const at = now();
      outcome = {
        ...base,
        runs,
        durationMs,
        status: 'failed',
        attempts,
        lastError,
        now: at,
        nextAttemptAt: at + retryDelayMs(attempts, { baseMs: retryBaseMs, maxMs: retryMaxMs, random }),
      };
    }
    await finish(outcome, delivery, failures.map((f) => ({ handler: f.handler, error: f.error ?? '' })));
  }

  async function finish(outcome: DispatchOutcome, delivery: Delivery, failures: ReadonlyArray<{ handler: string; error: string }> = []) {
    await complete(outcome);
    observer.deliveryFinished?.(delivery.eventType, outcome.status, { eventId: delivery.eventId, attempt: outcome.attempts, failures });
    if (outcome.status === 'dead') {
      logger.warn({ event_id: delivery.eventId, event_type: delivery.eventType, attempts: outcome.attempts, last_error: outcome.lastError }, 'delivery dead');
    } else if (outcome.status === 'failed') {
      logger.info(
        { event_id: delivery.eventId, event_type: delivery.eventType, attempts: outcome.attempts, next_attempt_at: new Date(outcome.nextAttemptAt!).toISOString() },
        'delivery will retry',
      );
    }
  }

  let draining: Promise<number> | null = null;
  let again = false;
  function wake(): Promise<number> {
    if (stopped) return Promise.resolve(0);
    if (draining) {
      again = true;
      return draining;
    }
    const current = drain().finally(() => {
      draining = null;
      if (again) {
        again = false;
        void wake();
      }
    });
    draining = current;
    return current;
  }

  return {
    owner,
    reserve() {
      if (stopped || running + waiting.length + reserved >= concurrency + handOffQueue) return null;
      reserved++;
      return { owner, until: clock() + leaseMs };
    },
    adopt(grant, d) {
      reserved--;
      if (stopped) return; // the lease runs out and another dispatcher (or a restart) takes it
      // A new event has no ledger yet; ingest parsed its body.
      waiting.push({ delivery: storedDelivery(d), payload: d.payload, until: grant.until });
      pump();
    },
    release() {
      reserved--;
    },
    wake() {
      void wake();
    },
    async runUntilIdle() {
      for (;;) {
        while (draining) await draining; // join a drain in progress without re-arming it
        const started = await wake();
        while (inflight.size > 0 || reserved > 0) {
          await Promise.all(inflight);
          if (reserved > 0) await new Promise((r) => setTimeout(r, 1)); // hand-offs about to be adopted
        }
        if (started === 0 && !draining && !backlog) return;
      }
    },
    async stop(graceMs = 10_000) {
      stopped = true;
      waiting.length = 0; // adopted, not started: their leases are given back below
      await draining;
      const all = Promise.all(inflight);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = await Promise.race([
        all.then(() => false),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        logger.warn({ in_flight: inflight.size }, 'handlers still running at shutdown: aborting them');
        runner.abortAll(new Error('shutting down'));
        await all; // settles at once: each run is raced against its signal
      }
      await store.releaseLeases(owner).catch(() => 0);
    },
  };
}
