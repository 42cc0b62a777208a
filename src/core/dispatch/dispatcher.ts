import { createBatcher } from '../batcher.js';
import { systemClock, type Clock } from '../clock.js';
import type { Delivery, DeliveryStore, DispatchOutcome, HandlerRun } from '../delivery-store.js';
import { storedDelivery, type LeaseGrant, type NewDelivery } from '../delivery.js';
import type { Logger } from '../observability/logger.js';
import { decideOutcome, type AttemptReport, type OutcomePolicy } from './decide-outcome.js';
import { createDispatchSlots } from './dispatch-slots.js';
import { createLeaseKeeper, type LeaseLoss } from './lease-keeper.js';
import type { Router } from './router.js';
import { createHandlerRunner, parseDeliveryBody, type HandlerObserver, type HandlerResult } from './run-handler.js';

/** What `DispatchObserver.deliveryFinished` learns about the attempt that ended. */
export interface DeliveryFinishedDetail {
  eventId: string;
  /** The delivery's attempt count once this outcome is stored. */
  attempt: number;
  /** The handlers that failed in this attempt (empty when none failed or none ran). */
  failures: ReadonlyArray<{ handler: string; error: string }>;
}

/** Hooks for metrics and alerts; every method optional. */
export interface DispatchObserver extends HandlerObserver {
  /** An attempt's outcome is stored (not called for an attempt interrupted by shutdown: nothing is stored). */
  deliveryFinished?(eventType: string, status: DispatchOutcome['status'], detail: DeliveryFinishedDetail): void;
  /**
   * This process lost a delivery's lease: another claim took it over, it could not be renewed in
   * time, or (`outcome_fenced`) the outcome write found another claim. Nothing was recorded.
   */
  leaseLost?(reason: LeaseLoss | 'outcome_fenced'): void;
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
  /**
   * How long a lease lasts unrenewed (default 15 s): a killed dispatcher's work is taken over
   * after it. Leases are renewed every third of it while handlers run (`renewEveryMs`).
   */
  leaseMs?: number;
  renewEveryMs?: number;
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
  leaseMs = 15_000,
  renewEveryMs,
  retryBaseMs = 2_000,
  retryMaxMs = 15 * 60_000,
  concurrency = 16,
  handOffQueue = concurrency * 8,
  random = Math.random,
  observer = {},
  schedule,
}: DispatcherOptions): Dispatcher {
  const policy: OutcomePolicy = { owner, maxAttempts, backoff: { baseMs: retryBaseMs, maxMs: retryMaxMs, random } };
  /** Resolves whether the outcome was recorded (false: its claim lost the row meanwhile). */
  const complete = createBatcher<DispatchOutcome, boolean>({
    execute: async (batch) => {
      const recorded = new Set(await store.completeDispatch(batch));
      return batch.map((o) => recorded.has(o.eventId));
    },
    schedule,
  });
  const runner = createHandlerRunner({ logger, clock, handlerTimeoutMs, observer });
  const leases = createLeaseKeeper({
    store, owner, logger, clock, leaseMs, renewEveryMs,
    onLost(eventId, why, error) {
      runner.abortDelivery(eventId, error);
      observer.leaseLost?.(why);
    },
  });
  /** Every dispatch not yet finished, its outcome write included (stop and runUntilIdle wait for these). */
  const inflight = new Set<Promise<void>>();
  const slots = createDispatchSlots({
    concurrency,
    handOffQueue,
    holds: (eventId) => leases.claimOf(eventId) !== undefined,
    start(delivery, ledger, payload, free) {
      const claimId = leases.claimOf(delivery.eventId)!;
      const p: Promise<void> = dispatchOne(delivery, claimId, ledger, payload, free)
        .catch((error: Error) => logger.error({ event_id: delivery.eventId, err: error.message }, 'dispatch failed'))
        .finally(() => {
          free();
          leases.release(delivery.eventId, claimId);
          inflight.delete(p);
        });
      inflight.add(p);
    },
    drainAgain: () => void wake(),
  });

  /** Lease statements failed in a row (the store unreachable). */
  let leaseFailures = 0;

  /** Leases and starts due deliveries until none is left; resolves with how many it started. */
  async function drain(): Promise<number> {
    let started = 0;
    while (!slots.stopped) {
      const limit = slots.leasable();
      if (limit === 0) return started; // the next dispatch to finish drains again
      let leased: Delivery[];
      let ledger: HandlerRun[];
      const claimId = leases.newClaim();
      try {
        const now = clock();
        leased = await store.leaseDue({ owner, claimId, now, leaseMs, limit });
        if (leaseFailures > 0) {
          logger.info({ failed_tries: leaseFailures }, 'dispatcher can lease deliveries again');
          leaseFailures = 0;
        }
        if (leased.length === 0) return started;
        // Ledger rows exist only once an attempt has failed: new deliveries need no read.
        const retried = leased.filter((d) => d.attempts > 0).map((d) => d.eventId);
        ledger = retried.length > 0 ? await store.handlerRuns(retried) : [];
        for (const d of leased) leases.hold(d.eventId, claimId, now + leaseMs);
      } catch (error) {
        // Leases taken expire by themselves; the next wake or poll tries again. One line per
        // outage, not one per poll: the store's own health (readyz, 503) tells the rest.
        if (leaseFailures++ === 0) logger.error({ err: (error as Error).message }, 'dispatcher could not lease deliveries');
        return started;
      }
      for (const delivery of leased) {
        slots.run(delivery, ledger.length === 0 ? ledger : ledger.filter((r) => r.eventId === delivery.eventId));
        started++;
      }
    }
    return started;
  }

  async function dispatchOne(delivery: Delivery, claimId: string, ledger: readonly HandlerRun[], parsed: unknown, free: () => void): Promise<void> {
    const handlers = router.handlersFor(delivery.eventType);
    let report: AttemptReport;
    let results: readonly HandlerResult[] = NO_RESULTS;
    if (handlers.length === 0) {
      report = { kind: 'no-handler' };
    } else {
      const body = parsed !== undefined ? { ok: true as const, payload: parsed } : parseDeliveryBody(delivery.body);
      if (!body.ok) {
        report = { kind: 'invalid-body', error: body.error };
      } else {
        // A first attempt (no ledger) runs every handler; a retry skips the ones that succeeded.
        const pending =
          ledger.length === 0 ? handlers : handlers.filter((h) => !ledger.some((r) => r.handler === h.name && r.status === 'succeeded'));
        results = await Promise.all(
          pending.map((h) => runner.run(h, delivery, body.payload, (ledger.find((r) => r.handler === h.name)?.attempts ?? 0) + 1)),
        );
        report = { kind: 'ran', results, hadLedger: ledger.length > 0 };
      }
    }
    free(); // the slot is for handlers; the outcome write that follows needs none
    const outcome = decideOutcome(delivery, report, clock(), policy);
    // Interrupted by shutdown: no outcome, so `stop` gives the lease back with the attempts unchanged.
    // Lease lost: the claim that holds it now records the outcome (the store fences this one anyway).
    if (outcome === null || leases.claimOf(delivery.eventId) !== claimId) return;
    outcome.claimId = claimId;
    if (!(await complete(outcome))) {
      logger.warn({ event_id: delivery.eventId, claim_id: claimId, status: outcome.status }, 'lease lost: outcome not recorded, another claim holds the delivery');
      observer.leaseLost?.('outcome_fenced');
      return;
    }
    if (observer.deliveryFinished) {
      observer.deliveryFinished(delivery.eventType, outcome.status, { eventId: delivery.eventId, attempt: outcome.attempts, failures: failuresOf(results) });
    }
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
    if (slots.stopped) return Promise.resolve(0);
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
    reserve: () => (slots.reserve() ? leases.grant() : null),
    adopt(grant, d) {
      leases.hold(d.eventId, grant.claimId, grant.until);
      // Ingest parsed its body already.
      slots.adopt(storedDelivery(d), d.payload);
    },
    release() {
      slots.release();
    },
    wake() {
      void wake();
    },
    async runUntilIdle() {
      for (;;) {
        while (draining) await draining; // join a drain in progress without re-arming it
        const started = await wake();
        while (inflight.size > 0 || slots.reserved > 0) {
          await Promise.all(inflight);
          if (slots.reserved > 0) await new Promise((r) => setTimeout(r, 1)); // hand-offs about to be adopted
        }
        if (started === 0 && !draining && !slots.backlog) return;
      }
    },
    async stop(graceMs = 10_000) {
      slots.stop(); // adopted hand-offs not started yet: their leases are given back below
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
      leases.clear();
      await store.releaseLeases(owner).catch(() => 0);
    },
  };
}

const NO_RESULTS: readonly HandlerResult[] = [];
const NO_FAILURES: DeliveryFinishedDetail['failures'] = Object.freeze([]);

function failuresOf(results: readonly HandlerResult[]): DeliveryFinishedDetail['failures'] {
  let failures: Array<{ handler: string; error: string }> | undefined;
  for (const r of results) if (!r.ok) (failures ??= []).push({ handler: r.handler, error: r.error ?? '' });
  return failures ?? NO_FAILURES;
}
