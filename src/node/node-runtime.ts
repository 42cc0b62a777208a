import type { Hono } from 'hono';
import { systemClock, type Clock } from '../core/clock.js';
import type { HandlerDefinition } from '../core/events/define-handler.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import type { NewDelivery } from '../core/delivery.js';
import { createDispatcher, type Dispatcher } from '../core/dispatch/dispatcher.js';
import { withHandOff } from '../core/dispatch/hand-off.js';
import type { Logger } from '../core/observability/logger.js';
import { createPodhookMetrics } from '../core/observability/podhook-metrics.js';
import { createReceiver } from '../core/ingest/receive-delivery.js';
import { pruneExpired } from '../core/dispatch/retention.js';
import { createRouter } from '../core/dispatch/router.js';
import { createSecretSource } from '../core/signing/secret-source.js';
import { createIngestHandler, type IngestHandler } from '../http/ingest.js';
import { createApp } from '../http/create-app.js';
import { createAdmin, type AdminOptions } from '../http/admin/create-admin.js';
import { createReadiness } from '../http/readiness.js';
import { dispatchTuning, type Config } from '../core/config.js';
import { createNodeSignatureCrypto } from './node-crypto.js';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';
import { createWalSync } from './wal-sync.js';
import { openDatabase, type OpenedDatabase } from './open-database.js';
import { createSqliteStore } from './sqlite-store.js';

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
  /** Admin options beyond the token (the alerts heartbeat's `lastDowntime`; tests shorten delays). */
  admin?: Partial<Omit<AdminOptions, 'token' | 'store' | 'router' | 'logger'>>;
}

export interface NodeRuntime {
  app: Hono<{ Variables: { requestId: string } }>;
  /** The app's ingest route as a plain function (the `node:http` listener calls it directly). */
  ingest: IngestHandler;
  store: DeliveryStore;
  dispatcher: Dispatcher;
  database: OpenedDatabase;
  /** Starts the dispatcher's poll timer and the retention prune (the server does; tests may not). */
  startBackground(): void;
  /** Deletes processed and ignored deliveries older than RETENTION_DAYS, in small transactions. */
  prune(): Promise<number>;
  /** Stops background work, lets in-flight handlers finish within `graceMs`, closes the database. */
  close(graceMs?: number): Promise<void>;
}

/** 16 MB of 4 KiB pages. */
const PRUNE_MAX_WAL_BEHIND_FRAMES = 4096;
/** The pause between prune chunks: deliveries that arrived meanwhile commit without a chunk. */
const PRUNE_GAP_MS = 2;
/** How long the prune runs before it waits for a checkpoint pass. */
const PRUNE_BURST_MS = 20;
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
  admin,
}: NodeRuntimeOptions): NodeRuntime {
  const database = openDatabase(config.databasePath, { busyTimeoutMs });
  // Group commit: every write waiting when the event loop turns (claims, leases, outcomes)
  // shares one transaction and one fsync.
  const walSync = config.databasePath === ':memory:' ? undefined : createWalSync(database.sqlite, config.databasePath);
  const baseStore = createSqliteStore(database, { schedule: setImmediate, durable: walSync?.sync });

  // `PRAGMA data_version` changes when another connection (a `podhook secrets add`) commits.
  // It is read once per event-loop turn: requests that arrive together share the check (each
  // read is a read transaction with its locks), and a change is still seen by the next turn.
  const dataVersion = database.sqlite.prepare('PRAGMA data_version').pluck();
  let seenVersion: unknown;
  let checkedThisTurn = false;
  const secrets = createSecretSource({
    configured: config.secrets,
    loadStored: async () => (await baseStore.listSecrets()).map((s) => s.secret),
    maybeChanged: () => {
      if (checkedThisTurn) return false;
      checkedThisTurn = true;
      setImmediate(() => (checkedThisTurn = false));
      const version = dataVersion.get();
      const changed = version !== seenVersion;
      seenVersion = version;
      return changed;
    },
  });
  // Writes through this connection do not move data_version: drop the cache ourselves.
  const store: DeliveryStore = {
    ...baseStore,
    addSecret: (s) => baseStore.addSecret(s).finally(() => secrets.invalidate()),
    removeSecret: (id) => baseStore.removeSecret(id).finally(() => secrets.invalidate()),
  };

  const metrics = createPodhookMetrics(store);
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
    observer: metrics.observer,
    schedule: setImmediate,
  });

  const claimOne = async (delivery: NewDelivery) => (await baseStore.claim([delivery]))[0]!;
  const receive = createReceiver({
    crypto: createNodeSignatureCrypto(),
    clock,
    secrets,
    claim: d.enabled ? withHandOff(claimOne, dispatcher, setImmediate) : claimOne,
  });

  const ingest = createIngestHandler({ receive, logger, maxBodyBytes: config.maxBodyBytes, onOutcome: metrics.onOutcome });
  const { adminToken } = config;
  const app = createApp({
    ingest,
    logger,
    webhookPath: config.webhookPath,
    extend: (a) => {
      a.get('/metrics', async (c) => c.body(await metrics.registry.render(), 200, { 'content-type': 'text/plain; version=0.0.4' }));
    },
    readiness: createReadiness({ store, secrets }),
    admin: adminToken === null ? undefined : () => createAdmin({ token: adminToken, store, router, logger, clock, wake: () => dispatcher.wake(), ...admin }),
  });

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  async function prune(): Promise<number> {
    const before = clock() - config.retentionDays * 86_400_000;
    const started = performance.now();
    let burst = started;
    /**
     * Between prune chunks (small transactions that share group commits with deliveries): a few
     * ms, so deliveries that arrived meanwhile commit without a chunk. After each 20 ms of
     * pruning, a checkpoint pass runs while the prune waits, then the prune rests as long again:
     * a prune writes WAL pages faster than a concurrent pass copies them, and its deletes from
     * the event-id index land on random pages, so unpaced it made passes, the writer's catch-up
     * checkpoint before a rewind and the disk's fsyncs long enough to stall ingest (measured in
     * the README). While a reader holds the checkpoint back (16 MB behind), it waits too, up to
     * 2 s a chunk.
     */
    const pause = async () => {
      await sleep(PRUNE_GAP_MS);
      if (!checkpointer) return;
      if (performance.now() - burst >= PRUNE_BURST_MS) {
        const asked = performance.now();
        await Promise.race([checkpointer.passNow(), new Promise((r) => setTimeout(r, 2000).unref())]);
        // Rest as long again as the pass took: a slow pass means a busy disk, where every
        // delivery's sync is waiting too.
        await sleep(Math.min(2000, performance.now() - asked));
        burst = performance.now();
      }
      for (let waited = 0; waited < 2000 && checkpointer.framesBehind() > PRUNE_MAX_WAL_BEHIND_FRAMES; waited += 25) await sleep(25);
    };
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
    prune,
    startBackground() {
      if (d.enabled) {
        dispatcher.wake(); // whatever a previous process left queued or due
        timers.push(setInterval(() => dispatcher.wake(), d.pollMs).unref());
      }
      const runPrune = () => void prune().catch((error: Error) => logger.error({ err: error.message }, 'prune failed'));
      timers.push(setTimeout(runPrune, 10_000).unref(), setInterval(runPrune, PRUNE_EVERY_MS).unref());
      if (config.databasePath !== ':memory:') {
        // Checkpoints move to a worker thread; the ingest connection keeps a 64 MB backstop.
        checkpointer = startCheckpointer({ path: config.databasePath, writer: database.sqlite });
        database.sqlite.pragma('wal_autocheckpoint = 16384');
      }
    },
    close(graceMs = 10_000) {
      closed ??= (async () => {
        for (const t of timers) clearInterval(t);
        await dispatcher.stop(graceMs);
        await checkpointer?.stop();
        database.close();
        walSync?.close();
      })();
      return closed;
    },
  };
}
