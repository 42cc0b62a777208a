import type { Hono } from 'hono';
import { systemClock, type Clock } from '../core/clock.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import { createGroupCommit } from '../core/group-commit.js';
import type { Logger } from '../core/logger.js';
import { createReceiver } from '../core/receive-delivery.js';
import { createSecretSource } from '../core/secret-source.js';
import { createApp } from '../http/create-app.js';
import { createDrizzleStore, createSyncClaimExecutor } from '../store/drizzle-store.js';
import type { Config } from './config.js';
import { createNodeSignatureCrypto } from './node-crypto.js';
import { openDatabase, type OpenedDatabase } from './open-database.js';

export interface NodeRuntimeOptions {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /** How long a commit waits for another process's write lock before ingest answers 503. */
  busyTimeoutMs?: number;
}

export interface NodeRuntime {
  app: Hono<{ Variables: { requestId: string } }>;
  store: DeliveryStore;
  database: OpenedDatabase;
  close(): void;
}

/**
 * Wires the core for Node: better-sqlite3 store with group commit, `node:crypto` HMAC, secrets
 * from the environment and the database (re-read when another process changes the file).
 */
export function createNodeRuntime({ config, logger, clock = systemClock, busyTimeoutMs }: NodeRuntimeOptions): NodeRuntime {
  const database = openDatabase(config.databasePath, { busyTimeoutMs });
  const baseStore = createDrizzleStore(database.db, { claim: createSyncClaimExecutor(database.db) });

  // `PRAGMA data_version` changes when another connection (a `podhook secrets add`) commits.
  const dataVersion = database.sqlite.prepare('PRAGMA data_version').pluck();
  let seenVersion: unknown;
  const secrets = createSecretSource({
    configured: config.secrets,
    loadStored: async () => (await baseStore.listSecrets()).map((s) => s.secret),
    maybeChanged: () => {
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

  const receive = createReceiver({
    crypto: createNodeSignatureCrypto(),
    clock,
    secrets,
    claim: createGroupCommit({ execute: store.claim, schedule: setImmediate }),
  });

  const app = createApp({
    receive,
    logger,
    webhookPath: config.webhookPath,
    maxBodyBytes: config.maxBodyBytes,
    readiness: async () => {
      const checks: Record<string, string> = {};
      try {
        await store.ping();
        checks.store = 'ok';
      } catch (error) {
        checks.store = `unreachable: ${(error as Error).message}`;
      }
      try {
        checks.secret = (await secrets.getSecrets()).length > 0 ? 'ok' : 'no signing secret configured';
      } catch {
        checks.secret = 'unknown: the store could not be read';
      }
      return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
    },
  });

  return { app, store, database, close: () => database.close() };
}
