import { closeSync, fdatasync, openSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { countWork } from '../../core/observability/work-count.js';

export interface WalSync {
  /** Resolves once everything committed so far is on disk. */
  sync(): Promise<void>;
  close(): void;
}

/**
 * Durable commits without blocking the event loop: the connection runs `synchronous=NORMAL`
 * and `sync()` fdatasyncs the WAL on libuv's thread pool, so a batch answered after it resolves
 * is on disk as with `synchronous=FULL` while the event loop keeps reading requests.
 * Keeping one descriptor is safe: SQLite restarts the WAL in place while a connection is open.
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
        countWork('sync');
        fdatasync(fd, (error) => (error ? reject(error) : resolve()));
      });
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
