import { existsSync } from 'node:fs';
import { describeStore, type Config } from '../core/config.js';
import type { DeliveryStore } from '../core/delivery-store.js';
import { openPostgresStore } from './postgres-database.js';
import { openSqliteStore } from './sqlite-store.js';

export interface OpenedStore {
  store: DeliveryStore;
  /** Where the store is, for messages: the SQLite path or the PostgreSQL URL without its password. */
  where: string;
  close(): Promise<void>;
}

/** An error message with the URL's password taken out, whatever the driver put in it. */
export function scrubPassword(message: string, databaseUrl: string | null): string {
  if (databaseUrl === null) return message;
  const password = decodeURIComponent(new URL(databaseUrl).password);
  return password ? message.split(password).join('***') : message;
}

/**
 * The store the CLI tools read: PostgreSQL when DATABASE_URL is set (migrated first), else the
 * SQLite file at DATABASE_PATH. With `mustExist`, a missing SQLite file is an error, not an empty store.
 */
export async function openConfiguredStore(config: Pick<Config, 'databaseUrl' | 'databasePath'>, { mustExist = false } = {}): Promise<OpenedStore> {
  const { database: where } = describeStore(config);
  if (config.databaseUrl !== null) {
    try {
      const { store, close } = await openPostgresStore(config.databaseUrl);
      return { store, where, close };
    } catch (error) {
      throw new Error(`cannot use PostgreSQL at ${where} (DATABASE_URL): ${scrubPassword((error as Error).message, config.databaseUrl)}`);
    }
  }
  if (mustExist && !existsSync(config.databasePath)) {
    throw new Error(`no database at ${config.databasePath} (set DATABASE_PATH, or start the server once)`);
  }
  const { store, close } = openSqliteStore(config.databasePath);
  return { store, where, close: async () => close() };
}
