import type { Column, SQL } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type { DeliveryStore } from '../core/delivery-store.js';
import type { Params } from './params.js';
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
 * resolves with each one's rows. `build` is handed the executor to build them on.
 */
export type Atomic = (build: (db: QueryDatabase) => readonly ReturningQuery[], options?: AtomicOptions) => Promise<unknown[][]>;

export interface AtomicOptions {
  /**
   * false: a write a crash may lose, because what it records dies with the process anyway (an
   * ordered handler's start: the key's lock is held by the attempt's lease; a backfill's page: lost
   * with its cursor's advance, it is requeued again). better-sqlite3 then answers it without waiting for a sync of its own. Default true.
   */
  durable?: boolean;
}

/** Statements ready to run for one call's values, on the executor `tx` (inside `atomic`). */
export type StatementSet<P> = (tx: QueryDatabase, values: P) => ReturningQuery[];

/**
 * Makes statements defined once over params (./params.ts) ready to run: better-sqlite3 prepares
 * them on first use with placeholders (building a drizzle query costs more than running it
 * there); D1 and PostgreSQL build them with each call's values (`buildEachCall`).
 */
export type Prepare = <P extends object>(keys: readonly (keyof P & string)[], build: (tx: QueryDatabase, p: Params<P>) => ReturningQuery[]) => StatementSet<P>;

/** `Prepare` for a backend that builds its statements with values on every call. */
export const buildEachCall: Prepare = (_keys, build) => (tx, values) => build(tx, values as never);

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
  prepare: Prepare;
  /** The event id as keyset paging orders it: byte order, whatever the database's collation. */
  byteOrder(id: Column): SQL;
  /**
   * The database server's clock (epoch ms), where replicas on several hosts share the database
   * (PostgreSQL): the rate buckets read their time there (`RateBucketStore.databaseNow`).
   */
  databaseNow?(): Promise<number>;
}

/** D1 refuses statements with more than 100 bound parameters: lists of ids go in chunks of this. */
export const MAX_IDS_PER_QUERY = 90;

/** Runs `read` over `ids` in chunks of `MAX_IDS_PER_QUERY`, one after another, and joins the rows. */
export async function inChunks<T>(ids: readonly string[], read: (chunk: string[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < ids.length; i += MAX_IDS_PER_QUERY) out.push(...(await read(ids.slice(i, i + MAX_IDS_PER_QUERY))));
  return out;
}
