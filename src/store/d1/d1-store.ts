import { drizzle } from 'drizzle-orm/d1';
import type { DeliveryStore } from '../../core/delivery-store.js';
import { createStore } from '../create-store.js';
import * as schema from '../sqlite/schema.js';
import { sqliteBackend } from '../sqlite/sqlite-backend.js';
import { createBatchDriver } from './batch-driver.js';

/**
 * The store over a D1 database. D1 is SQLite: the same dialect backend as better-sqlite3
 * (../sqlite/sqlite-backend.ts), with the batch driver (no interactive transactions; claims and
 * multi-statement writes are one atomic `batch`). The schema comes from the `drizzle/sqlite/`
 * migrations, applied by wrangler.
 */
export function createD1Store(d1: D1Database): DeliveryStore {
  const db = drizzle(d1, { schema });
  return createStore(sqliteBackend(db, createBatchDriver(db)));
}
