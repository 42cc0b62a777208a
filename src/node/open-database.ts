import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import * as schema from '../store/schema.js';
import { migrationsFolder } from './package-root.js';

export interface OpenDatabaseOptions {
  /** How long a write waits for another process's lock before failing (then ingest answers 503). */
  busyTimeoutMs?: number;
  /** Apply pending migrations (the server and CLI do; a read-only tool may not). */
  migrate?: boolean;
}

export interface OpenedDatabase {
  sqlite: Database.Database;
  db: BetterSQLite3Database<typeof schema> & { $client: Database.Database };
  close(): void;
}

/**
 * Opens (creating if needed) the SQLite file in WAL mode with `synchronous=FULL`, so every
 * commit is on disk when it returns; the server swaps that for wal-sync.ts on its own connection.
 * The file and its folder are owner-only because the file holds signing secrets.
 */
export function openDatabase(path: string, { busyTimeoutMs = 2000, migrate: runMigrations = true }: OpenDatabaseOptions = {}): OpenedDatabase {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // SQLite gives -wal and -shm the database file's mode, so creating it 0600 covers all three.
    closeSync(openSync(path, 'a', 0o600));
  }
  const sqlite = new Database(path, { timeout: busyTimeoutMs });
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  const db = drizzle(sqlite, { schema });
  if (runMigrations) migrate(db, { migrationsFolder: migrationsFolder() });
  return {
    sqlite,
    db,
    close() {
      if (sqlite.open) sqlite.close();
    },
  };
}
