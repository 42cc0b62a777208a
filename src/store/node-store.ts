import { existsSync } from 'node:fs';
import { describeStore, type Config } from '../core/config.js';
import type { DeliveryStore } from '../core/delivery-store.js';
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

/** The PostgreSQL modules (and the pg driver under them), loaded only where DATABASE_URL is set. */
async function importPostgres() {
  const [server, open] = await Promise.all([import('./postgres/postgres-server-store.js'), import('./postgres/open-postgres.js')]);
  return { openPostgresServerStore: server.openPostgresServerStore, openPostgresStore: open.openPostgresStore, scrubPassword: open.scrubPassword };
}

let postgres: Awaited<ReturnType<typeof importPostgres>> | undefined;

/**
 * Loads what the configured backend needs before `nodeStoreBackend` opens it: the PostgreSQL
 * modules when DATABASE_URL is set, nothing for SQLite. A process on SQLite never loads pg or
 * drizzle's PostgreSQL dialect (a tenth of its start).
 */
export async function loadStoreBackend(config: Pick<Config, 'databaseUrl'>): Promise<void> {
  if (config.databaseUrl !== null) postgres ??= await importPostgres();
}

function loadedPostgres(): NonNullable<typeof postgres> {
  if (!postgres) throw new Error('the PostgreSQL store is not loaded: await loadStoreBackend(config) before opening it');
  return postgres;
}

/**
 * The one place that chooses the Node store backend: PostgreSQL when DATABASE_URL is set (shared
 * by replicas; `loadStoreBackend` first), else the SQLite file at DATABASE_PATH.
 */
export function nodeStoreBackend(config: Pick<Config, 'databaseUrl' | 'databasePath'>): NodeStoreBackend {
  const { database: where } = describeStore(config);
  const { databaseUrl: url, databasePath: path } = config;
  if (url !== null) {
    return {
      where,
      exists: () => true,
      openServer: (options) => loadedPostgres().openPostgresServerStore(url, options),
      async openTool() {
        const pg = loadedPostgres();
        try {
          return { ...(await pg.openPostgresStore(url)), where };
        } catch (error) {
          throw new Error(`cannot use PostgreSQL at ${where} (DATABASE_URL): ${pg.scrubPassword((error as Error).message, url)}`);
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
  await loadStoreBackend(config);
  const backend = nodeStoreBackend(config);
  if (mustExist && !backend.exists()) {
    throw new Error(`no database at ${config.databasePath} (set DATABASE_PATH, or start the server once)`);
  }
  return backend.openTool();
}
