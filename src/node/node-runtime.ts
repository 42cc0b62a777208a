import { availableParallelism, hostname } from 'node:os';
import type { Context } from 'hono';
import { bearerAuth } from 'hono/bearer-auth';
import type { Alerter } from '../core/alerts/alerter.js';
import { scheduleBackfills, type BackfillScheduler } from '../core/backfill/index.js';
import { HEARTBEAT_EVERY_MS } from '../core/alerts/heartbeat.js';
import type { Downtime } from '../core/alerts/retry-outlook.js';
import { storedApiKeys } from '../core/pods/api-key-store.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { Config } from '../core/config.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import { createPrunePause } from '../core/dispatch/retention.js';
import type { Dispatcher } from '../core/dispatch/dispatcher.js';
import type { Logger } from '../core/observability/logger.js';
import { createPodhookMetrics } from '../core/observability/podhook-metrics.js';
import { receiverRedactor } from '../core/observability/redact-secrets.js';
import { storeJournals } from '../core/steps/index.js';
import { createWaitMetrics } from '../core/waits/index.js';
import { createSecretSource } from '../core/signing/secret-source.js';
import { createBodyBudget } from '../http/body-budget.js';
import { errorBody, type PodhookApp } from '../http/create-app.js';
import type { IngestHandler } from '../http/ingest.js';
import { createPodLocator } from '../core/pods/pod-locator.js';
import { createPodsReporter } from '../core/pods/pods-report.js';
import { wireReceiver, type RuntimeOptions } from '../runtime/wire-receiver.js';
import { nodeStoreBackend } from '../store/node-store.js';
import type { OpenedDatabase } from '../store/sqlite/open-database.js';
import { createLineWriter } from '../core/runner/handler-lines.js';
import type { CallScope } from '../core/runner/job-runner.js';
import { createNodeCallScope } from './call-scope.js';
import { createThreadRunner, type ThreadPoolObserver, type ThreadRunner } from './handler-threads/thread-runner.js';
import { createNodeSignatureCrypto } from './node-crypto.js';
import { createNodeIngestSource } from './node-listener.js';

export interface NodeRuntimeOptions extends RuntimeOptions {
  config: Config;
  logger: Logger;
  /** How long a commit waits for another process's write lock before ingest answers 503 (SQLite). */
  busyTimeoutMs?: number;
  /**
   * The module `handlers` came from (handlers/index.ts, `--handlers MODULE`): handler threads load
   * it (HANDLER_THREADS). Without it (handlers built in code, as tests do) they run in this thread.
   */
  handlersModule?: URL;
  /**
   * With handlers in this thread, install the process's handlers of uncaught exceptions and
   * unhandled rejections (`podhook serve` does; a test's process keeps its own).
   */
  catchStrays?: boolean;
  /**
   * Sends this thread's last spans (`podhook serve`: the tracing SDK's shutdown): run by `close`
   * once the handlers are done, beside the handler threads' own flush, so a stop takes one flush
   * timeout at most, not one after the other.
   */
  flushTracing?: () => Promise<void>;
}

export interface NodeRuntime {
  app: PodhookApp;
  /** What the app's ingest route calls, as a plain function. */
  ingest: IngestHandler;
  store: DeliveryStore;
  dispatcher: Dispatcher;
  /** The backfills' scheduler (it steps once `startBackground` ran, with the dispatcher on). */
  backfills: BackfillScheduler;
  /** The better-sqlite3 database when the store is SQLite (tests look inside it). */
  database?: OpenedDatabase;
  /** Resolves once the store is reachable (at once on SQLite; on PostgreSQL once reached and migrated). */
  storeReady: Promise<void>;
  /** Starts the dispatcher's poll timer, the heartbeat, the retention prune and the store's own background work. */
  startBackground(): void;
  /** Deletes processed and ignored deliveries older than RETENTION_DAYS, in small transactions. */
  prune(): Promise<number>;
  /** Alerts to ALERT_WEBHOOK_URL (`alerts.conflict(...)` for quarantined conflicts). */
  alerts: Alerter;
  /** The last downtime found from the heartbeats (epoch ms), for the inspector's banner and stats. */
  lastDowntime(): Promise<Downtime | null>;
  /** Stops background work, lets in-flight handlers finish within `graceMs`, closes the database. */
  close(graceMs?: number): Promise<void>;
  /** Body bytes held right now by requests being read (MAX_INFLIGHT_BODY_BYTES less what is left): tests wait on it. */
  bodyBytesInFlight(): number;
  /** The handler threads, when handlers run in threads (null: in this thread). */
  threads: ThreadRunner | null;
}

/** HANDLER_THREADS' default: one fewer than the machine's cores (the receiver's thread keeps one), 1 to 4. */
export const defaultHandlerThreads = () => Math.max(1, Math.min(4, availableParallelism() - 1));

const PRUNE_EVERY_MS = 60 * 60_000;

/**
 * Wires the core for Node: the store DATABASE_URL or DATABASE_PATH names (group commit), `node:crypto`
 * HMAC, secrets from the environment and the database (re-read when another process changes
 * them), the dispatcher fed by hand-off after each commit, and `/metrics`.
 */
export function createNodeRuntime({
  config,
  logger,
  handlers = [],
  payloads,
  clock = systemClock,
  busyTimeoutMs,
  random,
  onConflict,
  customize,
  admin,
  handlersModule,
  catchStrays = false,
  flushTracing,
}: NodeRuntimeOptions): NodeRuntime {
  const d = config.dispatch;
  const opened = nodeStoreBackend(config).openServer({
    logger,
    busyTimeoutMs,
    // Idle replicas wake on NOTIFY; DISPATCH_POLL_MS remains the fallback and finds retries coming due.
    onWork: d.enabled ? () => wired.dispatcher.wake() : undefined,
  });
  const baseStore = opened.store;
  const secrets = createSecretSource({
    configured: config.secrets,
    loadStored: async () => (await baseStore.listSecrets()).map((s) => s.secret),
    // The stored API key: never a signing secret, but no error text may quote it.
    loadHidden: () => storedApiKeys(baseStore),
    maybeChanged: opened.secretsMaybeChanged,
  });
  // Writes through this process do not always show as a change: drop the cache ourselves.
  const store: DeliveryStore = {
    ...baseStore,
    addSecret: (s) => baseStore.addSecret(s).finally(() => secrets.invalidate()),
    removeSecret: (id) => baseStore.removeSecret(id).finally(() => secrets.invalidate()),
  };

  const metrics = createPodhookMetrics(store, { clock, orderedHandlers: handlers.filter((h) => h.order !== undefined).map((h) => h.name) });
  const waitMetrics = createWaitMetrics(metrics.registry, store, { clock });
  const redact = receiverRedactor(config, secrets);
  const threadCount = d.handlerThreads ?? defaultHandlerThreads();
  const timeouts = new Map(handlers.flatMap((h) => (h.timeoutMs === undefined ? [] : [[h.name, h.timeoutMs] as const])));
  // Handler code runs beside the answer, in threads of its own, when there is a module to load there.
  const threads =
    d.enabled && handlersModule && threadCount > 0
      ? createThreadRunner({
          registry: handlersModule,
          threads: threadCount,
          logger,
          lines: createLineWriter(logger, redact),
          redact,
          clock,
          logLevel: config.logLevel,
          handlerTimeoutMs: d.handlerTimeoutMs,
          heapMb: d.handlerThreadHeapMb,
          timeoutOf: (name) => timeouts.get(name),
          observer: metrics.threads,
          // Waits are kept by the wiring below; a run asks only once it is made.
          journals: storeJournals(store, redact, { check: (ask, claimId) => wired.waits.check(ask, claimId) }),
          stepKey: config.stepEncryptionKey,
          // Made by the wiring below; a call comes only once it is made.
          pods: () => wired.pods(),
        })
      : null;
  // In this thread (HANDLER_THREADS=0) under `podhook serve`: an error handler code leaves behind
  // fails its call, as in a thread; one of no call's is logged redacted and ends the process.
  const scope = !threads && d.enabled && catchStrays ? strayScope(logger, redact, metrics.threads) : undefined;
  const bodyBudget = createBodyBudget(config.limits.maxInflightBodyBytes);
  const wired = wireReceiver({
    config,
    store,
    logger,
    clock,
    handlers,
    payloads,
    crypto: createNodeSignatureCrypto(),
    secrets,
    // The replica in a run's history: the host (a container's id), the process, and a random part.
    owner: `${hostname()}-pid${process.pid}-${crypto.randomUUID().slice(0, 8)}`,
    random,
    // An alert still retrying does not keep a stopping process alive.
    alerting: { sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref()) },
    instruments: [metrics.instrument],
    pods: metrics.pods,
    runner: threads ?? undefined,
    scope,
    redact,
    onBackfillStarted: () => scheduler.wake(),
    // Looked up when called, so the work-count test sees each one queued.
    schedule: (flush) => void setImmediate(flush),
    deferAdoption: (adopt) => void setImmediate(adopt),
    afterAnswer: (work) => void setImmediate(() => void work()),
    onDrift: metrics.onDrift,
    assertUsable: opened.assertUsable,
    storeHealth: opened.health,
    // Threads start with the background work: before that (a runtime built but not started) there is nothing to wait for.
    handlersHealth: threads ? () => (threadsStarted ? threads.health() : 'ok') : undefined,
    onOutcome: metrics.onOutcome,
    onWait: waitMetrics.observe,
    onConflict,
    ingestSource: createNodeIngestSource(bodyBudget),
    customize,
    extend: (app) => {
      if (config.metricsToken !== null) app.use('/metrics', metricsBearer(config.metricsToken));
      app.get('/metrics', async (c) => c.body(await metrics.registry.render(), 200, { 'content-type': 'text/plain; version=0.0.4' }));
    },
    admin: { podsReport: createPodsReporter({ config: config.pods, store, locator: createPodLocator(payloads), clock }), ...admin },
  });
  const { dispatcher, alerts, heartbeat } = wired;
  const scheduler = scheduleBackfills(wired.backfills, { dispatcher, logger });

  const beat = () =>
    void heartbeat
      .beat()
      .then((downtime) => downtime && alerts.downtime(downtime))
      .catch((error: Error) => logger.error({ err: error.message }, 'heartbeat failed'));
  // Unref'd: a pacing wait never keeps a stopping process alive.
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
  const prune = () =>
    wired.prune(createPrunePause({ sleep, now: () => performance.now(), checkpointer: opened.checkpointProgress() }));

  const timers: NodeJS.Timeout[] = [];
  let threadsStarted = false;
  let closed: Promise<void> | undefined;
  return {
    app: wired.app,
    ingest: wired.ingest,
    store,
    dispatcher,
    backfills: scheduler,
    database: opened.database,
    storeReady: opened.ready,
    prune,
    alerts,
    lastDowntime: () => heartbeat.lastDowntime(),
    bodyBytesInFlight: () => config.limits.maxInflightBodyBytes - bodyBudget.available(),
    threads,
    startBackground() {
      // Handler threads load the registry meanwhile: the first calls wait for them.
      threads?.start();
      threadsStarted = true;
      // The heartbeat and the poll wait until the store is reached (on PostgreSQL: no error lines meanwhile).
      void opened.ready.then(() => {
        if (closed) return;
        beat(); // at start: how long was the receiver down?
        timers.push(setInterval(beat, HEARTBEAT_EVERY_MS).unref());
        if (d.enabled) {
          // Whatever a previous process left queued or due, once the stored secrets and API key
          // are read: the redactor knows them before a handler's error is recorded.
          void secrets
            .getSecrets()
            .catch(() => undefined)
            .then(() => closed || dispatcher.wake());
          timers.push(setInterval(() => dispatcher.wake(), d.pollMs).unref());
          // A dispatching receiver runs these handlers from now on; then it takes part in backfills.
          void wired.backfills
            .register()
            .catch((error: Error) => logger.error({ err: error.message }, 'could not record the registered handlers'))
            .finally(() => closed || scheduler.start());
        }
      });
      opened.start();
      const runPrune = () => void prune().catch((error: Error) => logger.error({ err: error.message }, 'prune failed'));
      timers.push(setTimeout(runPrune, 10_000).unref(), setInterval(runPrune, PRUNE_EVERY_MS).unref());
    },
    close(graceMs = config.shutdownGraceMs) {
      closed ??= (async () => {
        for (const t of timers) clearInterval(t);
        // One budget for the whole stop: a backfill step stuck on the store takes it from the handlers, not beyond it.
        const ends = performance.now() + graceMs;
        await scheduler.stop(graceMs);
        await dispatcher.stop(Math.max(0, ends - performance.now()));
        // The threads flush their spans and exit, this thread flushes its own meanwhile; the handlers were waited for (or aborted) above.
        await Promise.all([threads?.close(Math.max(1_000, ends - performance.now())), flushTracing?.()]);
        // The last sign of life, so the next start measures the downtime from this stop.
        await store.writeHeartbeat(clock()).catch(() => {});
        await opened.close();
      })();
      return closed;
    },
  };
}

/**
 * METRICS_TOKEN as a bearer token (hono/bearer-auth: constant-time), every refusal a 401 in the
 * error shape: a malformed header too, which the middleware would answer 400.
 */
function metricsBearer(token: string) {
  const refuse = (c: Context) => c.json(errorBody('unauthorized', 'GET /metrics needs METRICS_TOKEN as a bearer token.'), 401);
  return bearerAuth({
    token,
    noAuthenticationHeader: { message: refuse },
    invalidAuthenticationHeader: { message: refuse, wwwAuthenticateHeader: 'Bearer' },
    invalidToken: { message: refuse },
  });
}

/**
 * The call scope of handlers in the receiver's thread: an error a call's code left behind fails
 * that call and is logged (redacted) and counted, as in a handler thread; one that belongs to no
 * call is podhook's own: logged redacted, and the process ends with code 1, as Node would end it
 * (without printing the error, secrets and all, to stderr).
 */
function strayScope(logger: Logger, redact: (text: string) => string, observer: ThreadPoolObserver): CallScope {
  const scope = createNodeCallScope(({ kind, error, call, failedRun }) => {
    const err = redact(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    observer.stray?.(kind, call?.handler);
    if (call) {
      logger.warn({ handler: call.handler, kind, err, run_failed: failedRun }, failedRun ? 'handler left an error behind: its run failed' : 'handler left an error behind after its run');
      return;
    }
    const stack = error instanceof Error && error.stack ? redact(error.stack) : undefined;
    logger.error({ kind, err, stack }, 'uncaught error outside any handler call: exiting');
    process.exit(1);
  });
  scope.install();
  return scope;
}
