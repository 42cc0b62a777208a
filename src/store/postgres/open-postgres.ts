import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import type { DeliveryStore } from '../../core/delivery-store.js';
import { createStore } from '../create-store.js';
import { migrationsFolder } from '../migrations-folder.js';
import { migrateWithLock } from './migrate-with-lock.js';
import { postgresBackend, type PostgresBackendOptions, type PostgresDatabase } from './postgres-backend.js';

/** `int8` (epoch milliseconds) read as a JS number: every time podhook stores fits in 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

export interface OpenPostgresOptions {
  /** Pool size (the server's dispatcher and ingest share it). */
  max?: number;
  /** How long a query waits for a connection before failing (then ingest answers 503). */
  connectionTimeoutMs?: number;
  onError?: (error: Error) => void;
}

export interface OpenedPostgres {
  pool: pg.Pool;
  db: PostgresDatabase;
  /** Applies pending migrations under the advisory lock. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

/** A pool on DATABASE_URL; nothing connects until the first query. */
export function openPostgres(url: string, { max = 10, connectionTimeoutMs = 5000, onError }: OpenPostgresOptions = {}): OpenedPostgres {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: connectionTimeoutMs, types });
  // An idle connection dropped by a restarting server must not crash the process.
  pool.on('error', (error) => onError?.(error));
  // A checked-out client between queries when the server shuts down emits 'error' too: its
  // queries fail (and ingest answers 503), so the process must not crash on the event.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = drizzle(pool) as PostgresDatabase;
  let ended = false;
  return {
    pool,
    db,
    migrate: () => migrateWithLock(pool, migrationsFolder('postgres')),
    async close() {
      if (ended) return;
      ended = true;
      await pool.end();
    },
  };
}

/** The store over a PostgreSQL database; the server passes `{ schedule: setImmediate }` for group commit. */
export function createPostgresStore(db: PostgresDatabase, options: PostgresBackendOptions = {}): DeliveryStore {
  return createStore(postgresBackend(db, options));
}

/** Opens the pool, migrates, and returns the store (the CLI tools: one attempt, errors surface). */
export async function openPostgresStore(url: string): Promise<{ store: DeliveryStore; close(): Promise<void> }> {
  // A one-shot tool: a dropped idle connection surfaces on its next query, not as a crash.
  const opened = openPostgres(url, { max: 4, onError: () => {} });
  try {
    await opened.migrate();
  } catch (error) {
    await opened.close();
    throw error;
  }
  return { store: createPostgresStore(opened.db), close: () => opened.close() };
}

/** An error message with the URL's password taken out, whatever the driver put in it. */
export function scrubPassword(message: string, databaseUrl: string | null): string {
  if (databaseUrl === null) return message;
  const password = decodeURIComponent(new URL(databaseUrl).password);
  return password ? message.split(password).join('***') : message;
}
