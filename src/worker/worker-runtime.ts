import type { Alerter, AlertMemory } from '../core/alerts/alerter.js';
import type { BackfillStepResult } from '../core/backfill/index.js';
import type { Downtime } from '../core/alerts/retry-outlook.js';
import { storedApiKeys } from '../core/api-key-store.js';
import { systemClock, type Clock } from '../core/clock.js';
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
import { createD1Store } from '../store/d1/d1-store.js';
import { createConsoleLogger } from './console-logger.js';
import { workerVariables, type WorkerEnv } from './worker-env.js';
import type { WaitersMemory } from '../core/waits/index.js';

export interface WorkerRuntimeOptions extends RuntimeOptions {
  env: WorkerEnv;
  /** Keeps background work alive after the response (`ctx.waitUntil`). */
  waitUntil: (work: Promise<unknown>) => void;
  /** Defaults to JSON lines on the console at `LOG_LEVEL`. */
  logger?: Logger;
  /** Alert rate limits and handler outcomes kept across requests (one per isolate). */
  alertMemory?: (minIntervalMs: number) => AlertMemory;
  /** Whether any run waits for an event (ctx.waitForEvent), kept per isolate: not read from D1 on every request. */
  waitersMemory?: WaitersMemory;
}

export interface WorkerRuntime {
  app: PodhookApp;
  store: DeliveryStore;
  dispatcher: Dispatcher;
  config: Config;
  logger: Logger;
  /** Deletes processed and ignored deliveries older than RETENTION_DAYS, in small batches. */
  prune(): Promise<number>;
  /**
   * The cron's part in backfills: records the handlers as running, then hands the dispatcher one
   * page (WORKER_BACKFILL_PAGE) of a running backfill, which this invocation's drain runs.
   */
  backfillStep(): Promise<BackfillStepResult>;
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

/** Web Crypto keeps no I/O, so one instance (and its imported-key cache) serves every request. */
const signatureCrypto = createWebSignatureCrypto();

/**
 * Wires the core for one Worker invocation from its bindings: D1 store (atomic batches), Web
 * Crypto HMAC, secrets from `SVC_WEBHOOK_SECRET` and D1, and a dispatcher that runs a stored
 * delivery's handlers under `waitUntil` after the response. Built per request: a Worker must not
 * carry I/O objects from one request into another, and every piece here is cheap to build.
 * Throws a `ConfigError` for an invalid variable.
 */
export function createWorkerRuntime({ env, waitUntil, handlers = [], payloads, logger, clock = systemClock, random, alertMemory, waitersMemory, onConflict, customize, admin }: WorkerRuntimeOptions): WorkerRuntime {
  const config = parseConfig(workerVariables(env));
  const log = logger ?? createConsoleLogger({ level: config.logLevel });
  const store = createD1Store(env.DB);
  // Built per request, so stored secrets are read once per delivery: a secret added to D1 by
  // `podhook register` is accepted by the next request in every isolate.
  const secrets = createSecretSource({
    configured: config.secrets,
    loadStored: async () => (await store.listSecrets()).map((s) => s.secret),
    loadHidden: () => storedApiKeys(store),
  });
  const afterResponse = () => new Promise<void>((resolve) => setTimeout(resolve, 0));
  const drain = (dispatcher: Dispatcher) =>
    dispatcher.runUntilIdle().catch((error: Error) => log.error({ err: error.message }, 'dispatch failed'));

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
    alerting: { defer: waitUntil, memory: alertMemory?.(config.alerts.minIntervalMinutes * 60_000) },
    waitersMemory,
    // No group commit: each request is its own invocation, and D1 commits each batch durably.
    // Hand-off, as on Node: the insert carries this invocation's lease and the handlers start
    // from memory once the row is committed (no lease UPDATE: one D1 row write less per
    // delivery), after the response is on its way. waitUntil keeps the invocation alive until
    // they, and anything else due, are done.
    deferAdoption: (adopt) => waitUntil(afterResponse().then(adopt).then(() => drain(wired.dispatcher))),
    // The drift check, after the answer, outlives it under waitUntil.
    afterAnswer: (work) => waitUntil(afterResponse().then(work)),
    // A replay drains under waitUntil.
    drainSoon: (dispatcher) => waitUntil(drain(dispatcher)),
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
      await wired.backfills.register();
      try {
        return await wired.backfills.step({ budget: WORKER_BACKFILL_PAGE });
      } finally {
        // The lease goes back with the step: the next cron run (any isolate) takes it at once.
        await wired.backfills.release();
      }
    },
  };
}
