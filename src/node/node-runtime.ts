import { createAlerter, type Alerter } from '../core/alerts/alerter.js';
import { combineObservers } from '../core/alerts/combine-observers.js';
import { createHeartbeat, HEARTBEAT_EVERY_MS } from '../core/alerts/heartbeat.js';
import { createFetchPost } from '../core/alerts/post-alert.js';
import type { Downtime } from '../core/alerts/retry-ladder.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import { systemClock, type Clock } from '../core/clock.js';
import type { HandlerDefinition } from '../core/events/define-handler.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import type { NewDelivery } from '../core/delivery.js';
import { createDispatcher, type Dispatcher } from '../core/dispatch/dispatcher.js';
import { withHandOff } from '../core/dispatch/hand-off.js';
import type { Logger } from '../core/observability/logger.js';
import { createPodhookMetrics } from '../core/observability/podhook-metrics.js';
import { createReceiver, type DeliveryConflict } from '../core/ingest/receive-delivery.js';
import { createPrunePause, pruneExpired } from '../core/dispatch/retention.js';
import { createRouter } from '../core/dispatch/router.js';
import { createSecretSource } from '../core/signing/secret-source.js';
import { createIngestHandler, type IngestHandler } from '../http/ingest.js';
import { createApp, errorBody, type PodhookApp } from '../http/create-app.js';
import { createAdmin, type AdminOptions } from '../http/admin/create-admin.js';
import { createReadiness } from '../http/readiness.js';
import { dispatchTuning, type Config } from '../core/config.js';
import { createNodeSignatureCrypto } from './node-crypto.js';
import { createNodeIngestSource } from './node-listener.js';
import { createBodyBudget } from '../http/body-budget.js';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';
import { createWalSync } from './wal-sync.js';
import { openDatabase, type OpenedDatabase } from './open-database.js';
import { createSqliteStore } from './sqlite-store.js';
import { startPostgresBackend, type PostgresBackend } from './postgres-backend.js';
import { UnavailableError } from '../core/errors.js';
import { createStoreHealth, type StoreHealth } from './store-health.js';

export interface NodeRuntimeOptions {
  config: Config;
  logger: Logger;
  /** The handler modules (the serve command passes handlers/index.ts). */
  handlers?: readonly HandlerDefinition[];
  clock?: Clock;
  /** How long a commit waits for another process's write lock before ingest answers 503. */
  busyTimeoutMs?: number;
  /** Jitter source for retries (tests pin it). */
  random?: () => number;
  /** Observes each delivery quarantined as a conflict (alerts). */
  onConflict?: (conflict: DeliveryConflict) => void;
  /** The team's middleware and routes (the serve command passes src/app.ts's `customizeApp`). */
  customize?: (app: PodhookApp) => void;
  /** Admin options beyond the token (the alerts heartbeat's `lastDowntime`; tests shorten delays). */
  admin?: Partial<Omit<AdminOptions, 'token' | 'store' | 'router' | 'logger'>>;
}

export interface NodeRuntime {
  app: PodhookApp;
  /** What the app's ingest route calls, as a plain function. */
  ingest: IngestHandler;
  store: DeliveryStore;
  dispatcher: Dispatcher;
  /** The SQLite database (absent on PostgreSQL). */
  database?: OpenedDatabase;
  /** Resolves once the store is reachable (at once on SQLite; on PostgreSQL once reached and migrated). */
  storeReady: Promise<void>;
  /** Starts the dispatcher's poll timer and the retention prune (the server does; tests may not). */
  startBackground(): void;
  /** Deletes processed and ignored deliveries older than RETENTION_DAYS, in small transactions. */
  prune(): Promise<number>;
  /** Alerts to ALERT_WEBHOOK_URL (`alerts.conflict(...)` for quarantined conflicts). */
  alerts: Alerter;
  /** Body bytes held now by requests being read, out of MAX_INFLIGHT_BODY_BYTES (tests wait on it). */
  bodyBytesInFlight(): number;
  /** The last downtime found from the heartbeats (epoch ms), for the inspector's banner and stats. */
  lastDowntime(): Promise<Downtime | null>;
  /** Stops background work, lets in-flight handlers finish within `graceMs`, closes the database. */
  close(graceMs?: number): Promise<void>;
}

const PRUNE_EVERY_MS = 60 * 60_000;

/**
 * Wires the core for Node: better-sqlite3 store with group commit, `node:crypto` HMAC, secrets
 * from the environment and the database (re-read when another process changes the file), the
 * dispatcher woken after each commit, and `/metrics`.
 */
export function createNodeRuntime({
  config,
  logger,
  handlers = [],
  clock = systemClock,
  busyTimeoutMs,
  random,
  onConflict,
  customize,
  admin,
}: NodeRuntimeOptions): NodeRuntime {
  // DATABASE_URL wins over DATABASE_PATH: PostgreSQL shared by replicas, else the SQLite file.
  const postgres: PostgresBackend | undefined = config.databaseUrl
    ? startPostgresBackend({
        url: config.databaseUrl,
        logger,
        schedule: setImmediate,
        // Idle replicas wake on NOTIFY; DISPATCH_POLL_MS remains the fallback and finds retries coming due.
        onWork: config.dispatch.enabled ? () => dispatcher.wake() : undefined,
      })
    : undefined;
  const database = postgres ? undefined : openDatabase(config.databasePath, { busyTimeoutMs });
  // Group commit: every write waiting when the event loop turns (claims, leases, outcomes)
  // shares one transaction and one fsync.
  const onDisk = database !== undefined && config.databasePath !== ':memory:';
  const walSync = onDisk ? createWalSync(database.sqlite, config.databasePath) : undefined;
  const health: StoreHealth | undefined = onDisk ? createStoreHealth({ path: config.databasePath, logger }) : undefined;
  // The files are checked with the WAL sync, so nothing is acknowledged into a deleted file.
  const durable = walSync && health ? () => Promise.all([walSync.sync(), health.verify()]).then(() => undefined) : undefined;
  const baseStore = postgres ? postgres.store : createSqliteStore(database!, { schedule: setImmediate, durable, onCommit: health?.committed });

  // data_version moves when another connection (`podhook secrets add`) commits; read once a turn,
  // as each read is a transaction. PostgreSQL has no such counter: its secrets are re-read each second.
  const dataVersion = database?.sqlite.prepare('PRAGMA data_version').pluck();
  let seenVersion: unknown;
  let checkedThisTurn = false;
  const secrets = createSecretSource({
    configured: config.secrets,
    loadStored: async () => {
      try {
        return (await baseStore.listSecrets()).map((s) => s.secret);
      } catch (error) {
        if (error instanceof UnavailableError) throw error;
        throw new UnavailableError('The stored signing secrets could not be read; retry later.', 'store_unavailable', { cause: error });
      }
    },
    maybeChanged: dataVersion && (() => {
      if (checkedThisTurn) return false;
      checkedThisTurn = true;
      setImmediate(() => (checkedThisTurn = false));
      const version = dataVersion.get();
      const changed = version !== seenVersion;
      seenVersion = version;
      return changed;
    }),
  });
  // Writes through this connection do not move data_version: drop the cache ourselves.
  const store: DeliveryStore = {
    ...baseStore,
    addSecret: (s) => baseStore.addSecret(s).finally(() => secrets.invalidate()),
    removeSecret: (id) => baseStore.removeSecret(id).finally(() => secrets.invalidate()),
  };

  const metrics = createPodhookMetrics(store, { clock });
  const metricsAuthorized = bearerCheck(config.metricsToken);
  const alerts = createAlerter({
    post: config.alerts.webhookUrl ? createFetchPost(config.alerts.webhookUrl) : null,
    logger,
    clock,
    minIntervalMs: config.alerts.minIntervalMinutes * 60_000,
    // An alert still retrying does not keep a stopping process alive.
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref()),
    secrets: config.secrets,
  });
  const heartbeat = createHeartbeat({ store, clock, downtimeThresholdMs: config.alerts.downtimeMinutes * 60_000 });
  const beat = () =>
    void heartbeat
      .beat()
      .then((downtime) => downtime && alerts.downtime(downtime))
      .catch((error: Error) => logger.error({ err: error.message }, 'heartbeat failed'));
  const d = config.dispatch;
  const router = createRouter(handlers);
  const dispatcher = createDispatcher({
    store,
    router,
    logger,
    clock,
    owner: `pid-${process.pid}-${crypto.randomUUID().slice(0, 8)}`,
    ...dispatchTuning(config),
    random,
    observer: combineObservers(metrics.observer, alerts.observer),
    schedule: setImmediate,
  });

  const claimOne = async (delivery: NewDelivery) => {
    health?.assertUsable();
    return (await baseStore.claim([delivery]))[0]!;
  };
  const receive = createReceiver({
    crypto: createNodeSignatureCrypto(),
    clock,
    secrets,
    claim: d.enabled ? withHandOff(claimOne, dispatcher, setImmediate) : claimOne,
    quarantine: (delivery, alternateId) => baseStore.quarantine(delivery, alternateId),
    onConflict: (conflict) => {
      onConflict?.(conflict);
      // Named by the id it is stored under: what an operator looks up before replaying it.
      void alerts.conflict([{ eventId: conflict.storedAs, eventType: conflict.eventType }]);
    },
  });

  const ingest = createIngestHandler({ receive, logger, maxBodyBytes: config.maxBodyBytes, onOutcome: metrics.onOutcome });
  const bodyBudget = createBodyBudget(config.limits.maxInflightBodyBytes);
  const { adminToken } = config;
  const app = createApp({
    ingest,
    logger,
    webhookPath: config.webhookPath,
    ingestSource: createNodeIngestSource(bodyBudget),
    customize,
    extend: (a) => {
      a.get('/metrics', async (c) => {
        if (!metricsAuthorized(c.req.header('authorization'))) {
          return c.json(errorBody('unauthorized', 'GET /metrics needs METRICS_TOKEN as a bearer token.'), 401, { 'www-authenticate': 'Bearer' });
        }
        return c.body(await metrics.registry.render(), 200, { 'content-type': 'text/plain; version=0.0.4' });
      });
    },
    readiness: createReadiness({ store, secrets, storeHealth: health?.check }),
    admin: adminToken === null ? undefined : () => createAdmin({ token: adminToken, store, router, logger, clock, wake: () => dispatcher.wake(), lastDowntime: () => heartbeat.lastDowntime(), ...admin }),
  });

  // Unref'd: a pacing wait never keeps a stopping process alive.
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

  async function prune(): Promise<number> {
    const before = clock() - config.retentionDays * 86_400_000;
    const started = performance.now();
    const pause = createPrunePause({ sleep, now: () => performance.now(), checkpointer });
    const total = await pruneExpired({ store, before, pause });
    if (total > 0) {
      logger.info({ removed: total, retention_days: config.retentionDays, duration_ms: Math.round(performance.now() - started) }, 'pruned old deliveries');
    }
    return total;
  }

  const timers: NodeJS.Timeout[] = [];
  let checkpointer: Checkpointer | undefined;
  let closed: Promise<void> | undefined;
  return {
    app,
    ingest,
    store,
    dispatcher,
    database,
    storeReady: postgres?.ready ?? Promise.resolve(),
    prune,
    alerts,
    bodyBytesInFlight: () => config.limits.maxInflightBodyBytes - bodyBudget.available(),
    lastDowntime: () => heartbeat.lastDowntime(),
    startBackground() {
      const start = () => {
        if (closed) return;
        beat(); // at start: how long was the receiver down?
        timers.push(setInterval(beat, HEARTBEAT_EVERY_MS).unref());
        if (d.enabled) {
          dispatcher.wake(); // whatever a previous process left queued or due
          timers.push(setInterval(() => dispatcher.wake(), d.pollMs).unref());
        }
      };
      // On PostgreSQL the heartbeat and the poll wait until the store is reached (no error lines meanwhile).
      if (postgres) void postgres.ready.then(start);
      else start();
      health?.start();
      const runPrune = () => void prune().catch((error: Error) => logger.error({ err: error.message }, 'prune failed'));
      timers.push(setTimeout(runPrune, 10_000).unref(), setInterval(runPrune, PRUNE_EVERY_MS).unref());
      if (database && config.databasePath !== ':memory:') {
        // Checkpoints move to a worker thread, so the ingest connection keeps only a high backstop.
        checkpointer = startCheckpointer({
          path: config.databasePath,
          writer: database.sqlite,
          onError: (error) => logger.warn({ err: error.message }, 'checkpointer stopped'),
        });
        database.sqlite.pragma('wal_autocheckpoint = 16384');
      }
    },
    close(graceMs = config.shutdownGraceMs) {
      closed ??= (async () => {
        for (const t of timers) clearInterval(t);
        await dispatcher.stop(graceMs);
        // The last sign of life, so the next start measures the downtime from this stop.
        await store.writeHeartbeat(clock()).catch(() => {});
        await checkpointer?.stop();
        database?.close();
        await postgres?.close();
        walSync?.close();
        health?.close();
      })();
      return closed;
    },
  };
}

/** Whether an Authorization header carries the token (always, when none is configured); constant time. */
function bearerCheck(token: string | null): (header: string | undefined) => boolean {
  if (token === null) return () => true;
  const expected = createHash('sha256').update(token).digest();
  return (header) => {
    const given = /^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '';
    return timingSafeEqual(createHash('sha256').update(given).digest(), expected);
  };
}
