import type { DeliveryStore } from '../../core/delivery-store.js';
import { createStore } from '../create-store.js';
import { openDatabase, type OpenDatabaseOptions, type OpenedDatabase } from './open-database.js';
import { sqliteBackend } from './sqlite-backend.js';
import { createSyncDriver, type SyncDriverOptions } from './sync-driver.js';

/**
 * The store over an opened better-sqlite3 database. The server passes `{ schedule: setImmediate }`
 * for group commit (sqlite-server-store.ts); one-shot tools commit each write at once.
 */
export function createSqliteStore(database: OpenedDatabase, options: SyncDriverOptions = {}): DeliveryStore {
  return createStore(sqliteBackend(database.db, createSyncDriver(database.db, options)));
}

/** Opens the SQLite file (migrations applied) and its store; `close()` closes the file. */
export function openSqliteStore(path: string, options?: OpenDatabaseOptions): { store: DeliveryStore; database: OpenedDatabase; close(): void } {
  const database = openDatabase(path, options);
  return { store: createSqliteStore(database), database, close: () => database.close() };
}
