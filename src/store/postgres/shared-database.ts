import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { QueryDatabase, ReturningQuery } from '../store-backend.js';

/**
 * PostgreSQL's drizzle database (or one transaction's) as the methods written once see a database.
 * They are typed against SQLite's query builder (`QueryDatabase`); PostgreSQL's builder takes the
 * same calls, and its tables mirror SQLite's column for column (both built by tables.ts), so the
 * two meet here, in the one place this backend's types are set aside. What proves it is not the
 * type checker but the store contract suite, which runs every shared method on this backend.
 */
export function sharedDatabase(db: NodePgDatabase): QueryDatabase {
  return db as unknown as QueryDatabase;
}

/**
 * Runs a statement a shared method built on `sharedDatabase`: PostgreSQL's drizzle queries are
 * promises, where SQLite's answer `.all()`.
 */
export function runShared(query: ReturningQuery): Promise<unknown[]> {
  return query as unknown as Promise<unknown[]>;
}
