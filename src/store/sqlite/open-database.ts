import Database from 'better-sqlite3';
import { countWork, workCountsBuffer } from '../../core/observability/work-count.js';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../../core/errors.js';
import * as schema from './schema.js';
import { migrationsFolder } from '../migrations-folder.js';

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
  const sqlite = unusablePathIsConfigError(path, () => {
    if (path !== ':memory:') {
      createFolders(dirname(resolve(path)));
      // SQLite gives -wal and -shm the database file's mode, so creating it 0600 covers all three.
      closeSync(openSync(path, 'a', 0o600));
    }
    // With the work-count test's counting on, every statement run is counted (better-sqlite3's `verbose`).
    const opened = new Database(path, workCountsBuffer() ? { timeout: busyTimeoutMs, verbose: () => countWork('statement') } : { timeout: busyTimeoutMs });
    try {
      opened.pragma('journal_mode = WAL');
    } catch (error) {
      opened.close();
      throw error;
    }
    return opened;
  });
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  const db = drizzle(sqlite, { schema });
  if (runMigrations) migrate(db, { migrationsFolder: migrationsFolder('sqlite') });
  return {
    sqlite,
    db,
    close() {
      if (sqlite.open) sqlite.close();
    },
  };
}

function unusablePathIsConfigError<T>(path: string, open: () => T): T {
  try {
    return open();
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`DATABASE_PATH ${path} cannot be used: ${(error as Error).message}`);
  }
}

/**
 * Creates the missing folders one level at a time, owner-only. Not `mkdirSync({ recursive })`:
 * under a path it cannot create (e.g. in /proc) that call never returns.
 */
function createFolders(dir: string): void {
  const missing: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    try {
      if (!statSync(at).isDirectory()) throw new Error(`${at} is not a folder`);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(at) === at) throw error;
      missing.unshift(at);
    }
  }
  for (const folder of missing) mkdirSync(folder, { mode: 0o700 });
}
