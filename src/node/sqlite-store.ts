import type { DeliveryStore } from '../core/delivery-store.js';
import { createDrizzleStore, createSyncDriver } from '../store/drizzle-store.js';
import { openDatabase, type OpenDatabaseOptions, type OpenedDatabase } from './open-database.js';

/** The store over an opened better-sqlite3 database. */
export function createSqliteStore(database: OpenedDatabase): DeliveryStore {
  return createDrizzleStore(database.db, createSyncDriver(database.db));
}

/** Opens the SQLite file (migrations applied) and its store; `close()` closes the file. */
export function openSqliteStore(path: string, options?: OpenDatabaseOptions): { store: DeliveryStore; database: OpenedDatabase; close(): void } {
  const database = openDatabase(path, options);
  return { store: createSqliteStore(database), database, close: () => database.close() };
}
