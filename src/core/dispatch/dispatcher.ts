import { systemClock, type Clock } from '../clock.js';
import type { DispatchStore } from '../delivery-store.js';
import { storedDelivery } from '../delivery.js';
import type { Logger } from '../observability/logger.js';
import { PASS_THROUGH_GATE, type AttemptGate } from './attempt-gate.js';
import type { OutcomePolicy } from './decide-outcome.js';
import { createDispatchAttempt } from './dispatch-attempt.js';
import { createDispatchEvents } from './dispatch-events.js';
import type { Dispatcher } from './dispatcher-api.js';
import { instrumentAttempt, instrumentCalls, instrumentSteps, type DispatchInstrument } from './dispatch-instrument.js';
import { createDispatchSlots } from './dispatch-slots.js';
import { createLeaseDrain } from './lease-drain.js';
import { createLeaseKeeper } from './lease-keeper.js';
import type { Router } from './router.js';
import { redactNothing, type Redact } from '../observability/redact-secrets.js';
import { createLineWriter } from '../runner/handler-lines.js';
import type { HandlerRunner } from '../runner/handler-runner.js';
import { createInThisThreadRunner } from '../runner/in-this-thread.js';
import type { CallScope, RunnerSteps } from '../runner/job-runner.js';
import type { PodsClient } from '../pods/pods-client.js';
import type { PayloadSchemaMap } from './typed-payload.js';
import { createWakeTimer } from './wake-timer.js';

export type { DeliveryFinishedDetail, DispatchSubscriber } from './dispatch-events.js';
export type { Dispatcher, DispatchLoad } from './dispatcher-api.js';

/** The store role a dispatcher uses. */
export type DispatcherStore = Pick<DispatchStore, 'leaseDue' | 'handlerRuns' | 'renewLeases' | 'completeDispatch' | 'releaseLeases'>;

export interface DispatcherOptions {
  store: DispatcherStore;
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
  /** Where handler code runs (default: this thread, `createInThisThreadRunner`, with the options below). */
  runner?: HandlerRunner;
  /** Decides per attempt what runs, waits or is settled (default: every pending handler runs). */
  gate?: AttemptGate;
  /** What watches dispatch: subscribers to its events, wrappers of attempts and handler calls. */
  instruments?: readonly DispatchInstrument[];
  /** How completion writes are deferred to share a transaction (Node: setImmediate). */
  schedule?: (flush: () => void) => void;
  /** Hides secrets in handlers' errors and log lines, once, where they come back (whichever runner ran them). */
  redact?: Redact;
  /** For the default runner: the generated schemas, durable steps, the pod client, the handler level floor. */
  payloadSchemas?: PayloadSchemaMap;
  steps?: RunnerSteps;
  pods?: () => Promise<PodsClient>;
  levelFloor?: number;
  scope?: CallScope;
}

/**
 * Drains the durable inbox: leases due deliveries, runs the handlers that have not yet
 * succeeded for each (the per-handler ledger), and records the outcome with retries,
 * exponential backoff with jitter, a time limit per call and dead letters. What runs where is the
 * runner's; what runs when, the gate's; who watches, the instruments'.
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
  redact = redactNothing,
  gate = PASS_THROUGH_GATE,
  instruments = [],
  schedule,
  ...forRunner
}: DispatcherOptions): Dispatcher {
  const runner =
    forRunner.runner ??
    createInThisThreadRunner({
      clock, handlerTimeoutMs, lines: createLineWriter(logger, redact), levelFloor: forRunner.levelFloor, schemas: forRunner.payloadSchemas, pods: forRunner.pods, scope: forRunner.scope,
      steps: forRunner.steps && { ...forRunner.steps, wrapStep: forRunner.steps.wrapStep ?? instrumentSteps(instruments) },
    });
  const events = createDispatchEvents(
    instruments.map((i) => i.subscriber),
    (error, event) => logger.error({ err: (error as Error)?.message, event }, 'dispatch event subscriber failed'),
  );
  const policy: OutcomePolicy = { owner, maxAttempts, backoff: { baseMs: retryBaseMs, maxMs: retryMaxMs, random } };
  const leases = createLeaseKeeper({
    store, owner, logger, clock, leaseMs, renewEveryMs,
    onLost(eventId, why, error) {
      runner.abortDelivery(eventId, error);
      events.emit('leaseLost', why);
    },
  });
  /** One timer for the earliest drain asked for at a later time (a delivery due again before the next poll). */
  const wakeTimer = createWakeTimer({ clock, wake: () => void drain.wake() });
  const attempt = createDispatchAttempt({
    store, gate, router, leases, logger, clock, policy, events, schedule, runner, redact,
    wakeAt: wakeTimer.at,
    wrap: instrumentCalls(instruments),
  });
  const dispatchOne = instrumentAttempt(instruments, attempt);
  let lastHandOffAt: number | null = null;
  /** Every dispatch not yet finished, its outcome write included (stop and runUntilIdle wait for these). */
  const inflight = new Set<Promise<void>>();
  const slots = createDispatchSlots({
    concurrency,
    handOffQueue,
    holds: (eventId, claimId) => leases.claimOf(eventId) === claimId,
    dropped: (eventId, claimId) => leases.release(eventId, claimId),
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
    drainAgain: () => void drain.wake(),
  });
  const drain = createLeaseDrain({ store, owner, leaseMs, clock, logger, leases, slots });

  return {
    owner,
    events,
    reserve() {
      lastHandOffAt = clock();
      return slots.reserve() ? leases.grant() : null;
    },
    adopt(grant, d) {
      leases.hold(d.eventId, grant.claimId, grant.until);
      // Ingest parsed its body already: a runner in this thread runs the handlers on that parse; one
      // that parses in a thread of its own does not need it, and this heap does not keep it.
      slots.adopt(storedDelivery(d), runner.readsBody ? undefined : d.payload, grant.claimId);
    },
    release() {
      slots.release();
    },
    wake() {
      void drain.wake();
    },
    async drained() {
      while (drain.current) await drain.current;
    },
    load() {
      return { concurrency, running: slots.running, waiting: slots.waiting, reserved: slots.reserved, backlog: slots.backlog, lastHandOffAt, leases: leases.size };
    },
    async runUntilIdle(budget = Infinity) {
      drain.allow(budget);
      for (;;) {
        while (drain.current) await drain.current; // join a drain in progress without re-arming it
        const started = await drain.wake();
        while (inflight.size > 0 || slots.reserved > 0) {
          await Promise.all(inflight);
          if (slots.reserved > 0) await new Promise((r) => setTimeout(r, 1)); // hand-offs about to be adopted
        }
        if (!drain.current && (drain.spent || (started === 0 && !slots.backlog))) return;
      }
    },
    async stop(graceMs = 10_000) {
      wakeTimer.clear();
      slots.stop(); // adopted hand-offs not started yet: their leases are given back below
      await drain.current;
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
