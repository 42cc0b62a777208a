import type { Alerter } from '../core/alerts/alerter.js';
import type { BackfillStepResult } from '../core/backfill/index.js';
import type { Downtime } from '../core/alerts/retry-outlook.js';
import { systemClock } from '../core/clock.js';
import { parseConfig, type Config } from '../core/config.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import type { Dispatcher } from '../core/dispatch/dispatcher.js';
import type { Logger } from '../core/observability/logger.js';
import { createSecretSource } from '../core/signing/secret-source.js';
import { createWebSignatureCrypto } from '../core/signing/signature-crypto.js';
import type { PodhookApp } from '../http/create-app.js';
import { createPodLocator } from '../core/pods/pod-locator.js';
import { createPodsReporter } from '../core/pods/pods-report.js';
import { wireReceiver, type RuntimeOptions } from '../runtime/wire-receiver.js';
import { readStoredKeys } from '../store/d1/d1-keys.js';
import { createD1Store } from '../store/d1/d1-store.js';
import { createConsoleLogger } from './console-logger.js';
import { scopedDispatcher, waitUntil } from './request-scope.js';
import { workerVariables, type WorkerEnv } from './worker-env.js';

export interface WorkerRuntimeOptions extends RuntimeOptions {
  env: WorkerEnv;
  /** Defaults to JSON lines on the console at `LOG_LEVEL`. */
  logger?: Logger;
}

export interface WorkerRuntime {
  app: PodhookApp;
  store: DeliveryStore;
  /** The current invocation's dispatcher (each invocation has its own, made on first use). */
  dispatcher: Dispatcher;
  config: Config;
  logger: Logger;
  /** Deletes processed and ignored deliveries older than RETENTION_DAYS, in small batches. */
  prune(): Promise<number>;
  /**
   * The cron's part in backfills: records the handlers as running, then hands the invocation's
   * dispatcher one page (WORKER_BACKFILL_PAGE) of a running backfill, which its drain runs.
   */
  backfillStep(): Promise<BackfillStepResult>;
  /** A cron run's drain: at most WORKER_CRON_PAGE deliveries leased, the rest left to the next minute. */
  drainPage(): Promise<void>;
  /** What a cron run's request scope sets (`inRequest`): its dispatcher's concurrency. */
  cronScope: { concurrency: number };
  /** Alerts to ALERT_WEBHOOK_URL, sent under `waitUntil` (`alerts.conflict(...)` for quarantined conflicts). */
  alerts: Alerter;
  /** Records a heartbeat (the cron does, every minute); a gap longer than ALERT_DOWNTIME_MINUTES is logged and alerted. */
  heartbeat(): Promise<Downtime | null>;
  /** The last downtime found from the heartbeats (epoch ms), for the inspector's banner and stats. */
  lastDowntime(): Promise<Downtime | null>;
}

/** Exports hold back deliveries younger than this: concurrent isolates may commit out of received order. */
const WORKER_EXPORT_SETTLE_MS = 5_000;

/**
 * Deliveries a cron run hands the dispatcher for a running backfill: one page a minute, so the
 * invocation stays well within D1's queries per invocation (each costs about eight with its run).
 */
export const WORKER_BACKFILL_PAGE = 25;

/**
 * Deliveries one cron run leases from D1 (a backfill's page among them): due retries, runs woken
 * from a sleep or a parked call, deliveries whose `waitUntil` was cut short. A woken run costs
 * up to about nine D1 queries (test/worker/bounded-drain-worker.test.ts counts them), so a page
 * stays under half of the 1,000 queries a Workers Paid invocation may make; the rest waits for
 * the next minute's run.
 */
export const WORKER_CRON_PAGE = 50;

/**
 * Deliveries a cron run's handlers run at once (DISPATCH_CONCURRENCY if lower). D1 answers one
 * query at a time per database, so a webhook's claim waits behind whatever the cron has in
 * flight: two at once keep that wait short while a page of woken runs goes through
 * (bench/worker-parked.ts). A cron run has minutes of wall time for its page.
 */
export const WORKER_CRON_CONCURRENCY = 2;

/**
 * Due deliveries a webhook request's drain may lease besides its own delivery (which its insert
 * leased already), at most once a second per isolate: due work does not wait for the cron while
 * traffic flows, a delivery's own cost stays one D1 batch after the answer, and a burst of due
 * work (runs woken together) stays mostly the cron's: at 4, the webhooks' drains woke 700 of
 * 1,000 parked runs in bench/worker-parked.ts, in the D1 the webhooks' claims wait on.
 */
export const WORKER_REQUEST_PAGE = 1;
const WORKER_REQUEST_DRAIN_EVERY_MS = 1_000;

/**
 * How long an isolate keeps the stored signing secrets (and the stored API key) it read: a secret
 * removed from D1 is refused by every isolate within this (a new one is accepted at once: a
 * delivery that matches no kept secret reads them again before its 401). Read again in the
 * background, under a request's waitUntil, once half of it has passed.
 */
export const WORKER_SECRETS_TTL_MS = 60_000;

/** Web Crypto keeps no I/O, so one instance (and its imported-key cache) serves every request. */
const signatureCrypto = createWebSignatureCrypto();

/** Lets the answer go out before the work that follows it (the hand-off's handlers, the drift check). */
const afterResponse = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * Wires the core for a Worker isolate from its bindings, once (createWorker keeps it per `env`):
 * the D1 store (atomic batches), Web Crypto HMAC, the signing secrets (`SVC_WEBHOOK_SECRET` and
 * D1's, kept), the router, the Hono app. What belongs to one invocation (its `waitUntil`, its
 * dispatcher's leases, timers and handlers in flight) is never held here: it is found through
 * the request scope (request-scope.ts), which `createWorker` opens around each invocation.
 * Throws a `ConfigError` for an invalid variable.
 */
export function createWorkerRuntime({ env, handlers = [], payloads, logger, clock = systemClock, random, onConflict, customize, admin }: WorkerRuntimeOptions): WorkerRuntime {
  const config = parseConfig(workerVariables(env));
  const log = logger ?? createConsoleLogger({ level: config.logLevel });
  // The D1 binding is the isolate's (workerd hands every invocation the same `env`; bindings are
  // not request-bound I/O objects), so one store serves every invocation.
  const store = createD1Store(env.DB);
  const secrets = createSecretSource({
    configured: config.secrets,
    loadAll: () => readStoredKeys(env.DB),
    ttlMs: WORKER_SECRETS_TTL_MS,
    refreshAhead: { afterMs: WORKER_SECRETS_TTL_MS / 2, run: (read) => waitUntil(afterResponse().then(read)) },
    // Each request reads for itself: none may wait on another's read.
    shareReads: false,
    recheckOnMismatch: true,
    now: clock,
  });
  const drain = (dispatcher: Dispatcher, budget: number) =>
    dispatcher.runUntilIdle(budget).catch((error: Error) => log.error({ err: error.message }, 'dispatch failed'));
  /** When a request's drain last looked for due work in D1 (a number: no I/O object). */
  let lookedAt = -Infinity;
  const requestDrain = () => {
    const now = clock();
    const look = now - lookedAt >= WORKER_REQUEST_DRAIN_EVERY_MS || now < lookedAt;
    if (look) lookedAt = now;
    return drain(wired.dispatcher, look ? WORKER_REQUEST_PAGE : 0);
  };

  const wired = wireReceiver({
    config,
    store,
    logger: log,
    clock,
    handlers,
    payloads,
    crypto: signatureCrypto,
    secrets,
    owner: `worker-${crypto.randomUUID().slice(0, 13)}`,
    random,
    scopeDispatcher: scopedDispatcher,
    alerting: { defer: waitUntil },
    // No group commit: each request is its own invocation, and D1 commits each batch durably.
    // Hand-off, as on Node: the insert carries this invocation's lease and the handlers start
    // from memory once the row is committed (no lease UPDATE: one D1 row write less per
    // delivery), after the response is on its way. waitUntil keeps the invocation alive until
    // they are done (and the small page of due work its drain may take).
    deferAdoption: (adopt) => waitUntil(afterResponse().then(adopt).then(requestDrain)),
    // The drift check, after the answer, outlives it under waitUntil.
    afterAnswer: (work) => waitUntil(afterResponse().then(work)),
    // A replay (the admin API) drains under waitUntil, a cron's page at most.
    drainSoon: (dispatcher) => waitUntil(drain(dispatcher, WORKER_CRON_PAGE)),
    // Runs a delivery woke (ctx.waitForEvent): as many, in the waking request's waitUntil (its wake runs there).
    drainWoken: (dispatcher, count) => drain(dispatcher, count).then(() => {}),
    onConflict,
    customize,
    // No long poll on the Worker (an export answers at once).
    admin: {
      maxWaitMs: 0,
      settleMs: WORKER_EXPORT_SETTLE_MS,
      podsReport: createPodsReporter({ config: config.pods, store, locator: createPodLocator(payloads), clock }),
      ...admin,
    },
  });
  const { dispatcher, alerts, heartbeat } = wired;

  return {
    app: wired.app,
    store,
    dispatcher,
    config,
    logger: log,
    alerts,
    async heartbeat() {
      const downtime = await heartbeat.beat();
      // Logged now; the send runs under waitUntil, so the cron's dispatch does not wait for it.
      if (downtime) void alerts.downtime(downtime);
      return downtime;
    },
    lastDowntime: () => heartbeat.lastDowntime(),
    prune: () => wired.prune(),
    async backfillStep() {
      // A stepper of this invocation's own: it holds the backfill it steps.
      const backfills = wired.backfillStepper();
      await backfills.register();
      try {
        return await backfills.step({ budget: WORKER_BACKFILL_PAGE });
      } finally {
        // The lease goes back with the step: the next cron run (any isolate) takes it at once.
        await backfills.release();
      }
    },
    drainPage: () => dispatcher.runUntilIdle(WORKER_CRON_PAGE),
    cronScope: { concurrency: Math.min(config.dispatch.concurrency, WORKER_CRON_CONCURRENCY) },
  };
}
