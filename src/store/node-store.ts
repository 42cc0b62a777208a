import { existsSync } from 'node:fs';
import { describeStore, type Config } from '../core/config.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import { openPostgresServerStore } from './postgres/postgres-server-store.js';
import { openPostgresStore, scrubPassword } from './postgres/open-postgres.js';
import type { ServerStore, ServerStoreOptions } from './server-store.js';
import { openSqliteServerStore } from './sqlite/sqlite-server-store.js';
import { openSqliteStore } from './sqlite/sqlite-store.js';

/** A store opened by a CLI tool. */
export interface OpenedStore {
  store: DeliveryStore;
  /** Where the store is, for messages: the SQLite path or the PostgreSQL URL without its password. */
  where: string;
  close(): Promise<void>;
}

/** The store backend a Node process uses, as its configuration names it. */
export interface NodeStoreBackend {
  /** Where the store is, for messages: the SQLite path or the PostgreSQL URL without its password. */
  where: string;
  /** Whether there is a store to read: a SQLite file that exists (the server made it), or any PostgreSQL URL. */
  exists(): boolean;
  /** The server's store: group commit, health, background work. */
  openServer(options: ServerStoreOptions): ServerStore;
  /** A CLI tool's store: each write commits at once; PostgreSQL is migrated first, and an unreachable one is an error. */
  openTool(): Promise<OpenedStore>;
}

/**
 * The one place that chooses the Node store backend: PostgreSQL when DATABASE_URL is set (shared
 * by replicas), else the SQLite file at DATABASE_PATH.
 */
export function nodeStoreBackend(config: Pick<Config, 'databaseUrl' | 'databasePath'>): NodeStoreBackend {
  const { database: where } = describeStore(config);
  const { databaseUrl: url, databasePath: path } = config;
  if (url !== null) {
    return {
      where,
      exists: () => true,
      openServer: (options) => openPostgresServerStore(url, options),
      async openTool() {
        try {
          return { ...(await openPostgresStore(url)), where };
        } catch (error) {
          throw new Error(`cannot use PostgreSQL at ${where} (DATABASE_URL): ${scrubPassword((error as Error).message, url)}`);
        }
      },
    };
  }
  return {
    where,
    exists: () => existsSync(path),
    openServer: (options) => openSqliteServerStore(path, options),
    async openTool() {
      const { store, close } = openSqliteStore(path);
      return { store, where, close: async () => close() };
    },
  };
}

/**
 * The store the CLI tools read (see `nodeStoreBackend`). With `mustExist`, a missing SQLite file
 * is an error, not an empty store.
 */
export async function openConfiguredStore(config: Pick<Config, 'databaseUrl' | 'databasePath'>, { mustExist = false } = {}): Promise<OpenedStore> {
  const backend = nodeStoreBackend(config);
  if (mustExist && !backend.exists()) {
    throw new Error(`no database at ${config.databasePath} (set DATABASE_PATH, or start the server once)`);
  }
  return backend.openTool();
}
