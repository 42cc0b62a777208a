import { createAlerter, type Alerter, type AlertMemory } from '../core/alerts/alerter.js';
import { createHeartbeat } from '../core/alerts/heartbeat.js';
import { createFetchPost } from '../core/alerts/post-alert.js';
import type { Downtime } from '../core/alerts/retry-outlook.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { HandlerDefinition } from '../core/events/define-handler.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import type { NewDelivery } from '../core/delivery.js';
import { createDispatcher, type Dispatcher } from '../core/dispatch/dispatcher.js';
import { withHandOff } from '../core/dispatch/hand-off.js';
import type { Logger } from '../core/observability/logger.js';
import { createReceiver, type DeliveryConflict } from '../core/ingest/receive-delivery.js';
import { pruneExpired } from '../core/dispatch/retention.js';
import { createRouter } from '../core/dispatch/router.js';
import { createSecretSource } from '../core/signing/secret-source.js';
import { createWebSignatureCrypto } from '../core/signing/signature-crypto.js';
import { createIngestHandler } from '../http/ingest.js';
import { createApp, type PodhookApp } from '../http/create-app.js';
import { createAdmin, type AdminOptions } from '../http/admin/create-admin.js';
import { createReadiness } from '../http/readiness.js';
import { dispatchTuning, parseConfig, type Config } from '../core/config.js';
import { createConsoleLogger } from './console-logger.js';
import { createD1Store } from './d1-store.js';
import { workerVariables, type WorkerEnv } from './worker-env.js';

export interface WorkerRuntimeOptions {
  env: WorkerEnv;
  /** Keeps background work alive after the response (`ctx.waitUntil`). */
  waitUntil: (work: Promise<unknown>) => void;
  handlers?: readonly HandlerDefinition[];
  /** Defaults to JSON lines on the console at `LOG_LEVEL`. */
  logger?: Logger;
  clock?: Clock;
  /** Jitter source for retries (tests pin it). */
  random?: () => number;
  /** Alert rate limits and handler outcomes kept across requests (one per isolate). */
  alertMemory?: (minIntervalMs: number) => AlertMemory;
  /** Observes each delivery quarantined as a conflict (alerts). */
  onConflict?: (conflict: DeliveryConflict) => void;
  /** The team's middleware and routes (the entry passes src/app.ts's `customizeApp`). */
  customize?: (app: PodhookApp) => void;
  /** Admin options beyond the token (e.g. `lastDowntime`). */
  admin?: Partial<Omit<AdminOptions, 'token' | 'store' | 'router' | 'logger'>>;
}

export interface WorkerRuntime {
  app: PodhookApp;
  store: DeliveryStore;
  dispatcher: Dispatcher;
  config: Config;
  logger: Logger;
  /** Deletes processed and ignored deliveries older than RETENTION_DAYS, in small batches. */
  prune(): Promise<number>;
  /** Alerts to ALERT_WEBHOOK_URL, sent under `waitUntil` (`alerts.conflict(...)` for quarantined conflicts). */
  alerts: Alerter;
  /** Records a heartbeat (the cron does, every minute); a gap longer than ALERT_DOWNTIME_MINUTES is logged and alerted. */
  heartbeat(): Promise<Downtime | null>;
  /** The last downtime found from the heartbeats (epoch ms), for the inspector's banner and stats. */
  lastDowntime(): Promise<Downtime | null>;
}

/** Exports hold back deliveries younger than this: concurrent isolates may commit out of received order. */
const WORKER_EXPORT_SETTLE_MS = 5_000;

/** Web Crypto keeps no I/O, so one instance (and its imported-key cache) serves every request. */
const signatureCrypto = createWebSignatureCrypto();

/**
 * Wires the core for one Worker invocation from its bindings: D1 store (atomic batches), Web
 * Crypto HMAC, secrets from `SVC_WEBHOOK_SECRET` and D1, and a dispatcher that runs a stored
 * delivery's handlers under `waitUntil` after the response. Built per request: a Worker must not
 * carry I/O objects from one request into another, and every piece here is cheap to build.
 * Throws a `ConfigError` for an invalid variable.
 */
export function createWorkerRuntime({ env, waitUntil, handlers = [], logger, clock = systemClock, random, alertMemory, onConflict, customize, admin }: WorkerRuntimeOptions): WorkerRuntime {
  const config = parseConfig(workerVariables(env));
  const log = logger ?? createConsoleLogger({ level: config.logLevel });
  const store = createD1Store(env.DB);
  // Built per request, so stored secrets are read once per delivery: a secret added to D1 by
  // `podhook register` is accepted by the next request in every isolate.
  const secrets = createSecretSource({
    configured: config.secrets,
    loadStored: async () => (await store.listSecrets()).map((s) => s.secret),
  });

  const minIntervalMs = config.alerts.minIntervalMinutes * 60_000;
  const alerts = createAlerter({
    post: config.alerts.webhookUrl ? createFetchPost(config.alerts.webhookUrl) : null,
    logger: log,
    clock,
    minIntervalMs,
    defer: waitUntil,
    secrets: config.secrets,
    memory: alertMemory?.(minIntervalMs),
  });
  const beats = createHeartbeat({ store, clock, downtimeThresholdMs: config.alerts.downtimeMinutes * 60_000 });

  const d = config.dispatch;
  const router = createRouter(handlers);
  const dispatcher = createDispatcher({
    store,
    router,
    logger: log,
    clock,
    owner: `worker-${crypto.randomUUID().slice(0, 13)}`,
    ...dispatchTuning(config),
    random,
    observer: alerts.observer,
  });
  const afterResponse = () => new Promise<void>((resolve) => setTimeout(resolve, 0));
  const drain = () =>
    dispatcher.runUntilIdle().catch((error: Error) => log.error({ err: error.message }, 'dispatch failed'));

  // No group commit: each request is its own invocation, and D1 commits each batch durably.
  const claimOne = async (delivery: NewDelivery) => (await store.claim([delivery]))[0]!;
  const receive = createReceiver({
    crypto: signatureCrypto,
    clock,
    secrets,
    // Hand-off, as on Node: the insert carries this invocation's lease and the handlers start
    // from memory once the row is committed (no lease UPDATE: one D1 row write less per
    // delivery), after the response is on its way. waitUntil keeps the invocation alive until
    // they, and anything else due, are done.
    claim: d.enabled ? withHandOff(claimOne, dispatcher, (adopt) => waitUntil(afterResponse().then(adopt).then(drain))) : claimOne,
    quarantine: (delivery, alternateId) => store.quarantine(delivery, alternateId),
    onConflict,
  });

  const { adminToken } = config;
  const app = createApp({
    ingest: createIngestHandler({ receive, logger: log, maxBodyBytes: config.maxBodyBytes }),
    logger: log,
    webhookPath: config.webhookPath,
    readiness: createReadiness({ store, secrets }),
    customize,
    // No long poll on the Worker (an export answers at once); a replay drains under waitUntil.
    admin:
      adminToken === null
        ? undefined
        : () => createAdmin({ token: adminToken, store, router, logger: log, clock, maxWaitMs: 0, settleMs: WORKER_EXPORT_SETTLE_MS, wake: () => waitUntil(drain()), lastDowntime: () => beats.lastDowntime(), ...admin }),
  });

  return {
    app,
    store,
    dispatcher,
    config,
    logger: log,
    alerts,
    async heartbeat() {
      const downtime = await beats.beat();
      // Logged now; the send runs under waitUntil, so the cron's dispatch does not wait for it.
      if (downtime) void alerts.downtime(downtime);
      return downtime;
    },
    lastDowntime: () => beats.lastDowntime(),
    async prune() {
      const before = clock() - config.retentionDays * 86_400_000;
      const removed = await pruneExpired({ store, before });
      if (removed > 0) log.info({ removed, retention_days: config.retentionDays }, 'pruned old deliveries');
      return removed;
    },
  };
}
