import { drizzle } from 'drizzle-orm/d1';
import type { DeliveryStore } from '../core/delivery-store.js';
import { createBatchDriver, createDrizzleStore } from '../store/drizzle-store.js';
import * as schema from '../store/schema.js';

/**
 * The store over a D1 database: the same drizzle implementation as better-sqlite3, with the
 * batch driver (D1 has no interactive transactions; claims and multi-statement writes are one
 * atomic `batch`). The schema comes from the `drizzle/sqlite/` migrations, applied by wrangler.
 */
export function createD1Store(d1: D1Database): DeliveryStore {
  const db = drizzle(d1, { schema });
  return createDrizzleStore(db, createBatchDriver(db));
}
