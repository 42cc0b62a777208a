import { closeSync, fdatasync, openSync } from 'node:fs';
import type Database from 'better-sqlite3';

export interface WalSync {
  /** Resolves once everything committed so far is on disk. */
  sync(): Promise<void>;
  close(): void;
}

/**
 * Durable commits without blocking the event loop. The connection runs `synchronous=NORMAL`
 * (SQLite writes the WAL at COMMIT but does not fsync it); the group-commit driver then calls
 * `sync()`, an `fdatasync` of the WAL file on libuv's thread pool, and answers the batch only
 * after it resolves. Acknowledged deliveries are on disk exactly as with `synchronous=FULL`;
 * meanwhile the event loop reads and verifies the next requests instead of waiting in the
 * kernel. (NORMAL in WAL mode never corrupts the database; it only leaves the last commits
 * unsynced, which this sync covers.) The WAL file stays the same inode while this connection is
 * open: SQLite deletes it only when the last connection closes, and restarts or truncates it in
 * place.
 */
export function createWalSync(sqlite: Database.Database, databasePath: string): WalSync {
  sqlite.pragma('synchronous = NORMAL');
  let fd: number | undefined;
  return {
    sync() {
      return new Promise<void>((resolve, reject) => {
        try {
          fd ??= openSync(`${databasePath}-wal`, 'r+');
        } catch (error) {
          reject(error as Error);
          return;
        }
        fdatasync(fd, (error) => (error ? reject(error) : resolve()));
      });
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
