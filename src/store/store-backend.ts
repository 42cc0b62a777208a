import type { Column, SQL } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type { DeliveryStore } from '../core/delivery-store.js';
import type * as sqliteTables from './sqlite/schema.js';

/**
 * The tables every backend has: the same names, columns and column names in each dialect
 * (src/store/sqlite/schema.ts and its mirror src/store/postgres/schema.ts).
 */
export type Tables = typeof sqliteTables;

/**
 * A backend's drizzle database as the shared methods build queries on it. They are written once,
 * typed against the SQLite dialect's builder: the calls they make (select … where, orderBy,
 * limit; insert … onConflictDoNothing / onConflictDoUpdate … returning; update and delete …
 * returning) have the same shape in PostgreSQL's builder, and PostgreSQL's tables mirror
 * SQLite's column for column, so its backend hands its database and tables in under these types
 * (postgres/postgres-backend.ts). The store contract suite runs every method on all three backends.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type QueryDatabase = BaseSQLiteDatabase<'sync' | 'async', any, Tables>;

/** A statement with RETURNING (or a select), as `atomic` runs it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ReturningQuery = { all(): any };

/**
 * Runs the statements `build` makes, in order and atomically (one transaction, or D1's one
 * batch, which cannot branch: a statement cannot depend on an earlier one's answer in code);
 * resolves with each one's rows. `build` is handed the executor to build them on. `durable: false`
 * (better-sqlite3) lets the commit skip its own sync: a write a crash may lose, as a lease is.
 */
export type Atomic = (build: (db: QueryDatabase) => readonly ReturningQuery[], options?: { durable?: boolean }) => Promise<unknown[][]>;

/** The store methods whose SQL differs by dialect: the hot path (claim, lease, renew, outcome), prune and ping. */
export type BackendMethods = Pick<DeliveryStore, 'claim' | 'leaseDue' | 'renewLeases' | 'completeDispatch' | 'prune' | 'ping'>;

/**
 * One store backend (better-sqlite3, D1 or PostgreSQL): its database and tables for the methods
 * written once (`createStore`), how it runs statements atomically, and its own SQL for the rest.
 */
export interface StoreBackend extends BackendMethods {
  db: QueryDatabase;
  tables: Tables;
  atomic: Atomic;
  /** The event id as keyset paging orders it: byte order, whatever the database's collation. */
  byteOrder(id: Column): SQL;
}

/** D1 refuses statements with more than 100 bound parameters: lists of ids go in chunks of this. */
export const MAX_IDS_PER_QUERY = 90;

/** Runs `read` over `ids` in chunks of `MAX_IDS_PER_QUERY`, one after another, and joins the rows. */
export async function inChunks<T>(ids: readonly string[], read: (chunk: string[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < ids.length; i += MAX_IDS_PER_QUERY) out.push(...(await read(ids.slice(i, i + MAX_IDS_PER_QUERY))));
  return out;
}
