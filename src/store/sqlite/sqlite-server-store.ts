import type { ServerStore, ServerStoreOptions } from '../server-store.js';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';
import { openDatabase } from './open-database.js';
import { createSqliteStore } from './sqlite-store.js';
import { createStoreHealth } from './store-health.js';
import { createWalSync } from './wal-sync.js';

/**
 * The Node server's SQLite store: group commit (every write waiting when the event loop turns
 * shares one transaction), made durable by fdatasync on the thread pool (wal-sync.ts) after the
 * files are checked to still have a name (store-health.ts), checkpoints on a worker thread
 * (checkpointer.ts), and `PRAGMA data_version` to notice secrets another process stored.
 */
export function openSqliteServerStore(path: string, { logger, busyTimeoutMs }: ServerStoreOptions): ServerStore {
  const database = openDatabase(path, { busyTimeoutMs });
  const onDisk = path !== ':memory:';
  const walSync = onDisk ? createWalSync(database.sqlite, path) : undefined;
  const health = onDisk ? createStoreHealth({ path, logger }) : undefined;
  // The files are checked with the WAL sync, so nothing is acknowledged into a deleted file.
  const durable = walSync && health ? () => Promise.all([walSync.sync(), health.verify()]).then(() => undefined) : undefined;
  // setImmediate looked up when called, so the work-count test sees each flush queued.
  const store = createSqliteStore(database, { schedule: (flush) => void setImmediate(flush), durable, onCommit: health?.committed });

  // data_version moves when another connection (`podhook secrets add`) commits; read once a turn,
  // as each read is a transaction.
  const dataVersion = database.sqlite.prepare('PRAGMA data_version').pluck();
  let seenVersion: unknown;
  let checkedThisTurn = false;
  let checkpointer: Checkpointer | undefined;
  return {
    store,
    database,
    ready: Promise.resolve(),
    assertUsable: () => health?.assertUsable(),
    health: () => health?.check() ?? 'ok',
    secretsMaybeChanged() {
      if (checkedThisTurn) return false;
      checkedThisTurn = true;
      setImmediate(() => (checkedThisTurn = false));
      const version = dataVersion.get();
      const changed = version !== seenVersion;
      seenVersion = version;
      return changed;
    },
    checkpointProgress: () => checkpointer,
    start() {
      health?.start();
      if (!onDisk || checkpointer) return;
      // Checkpoints move to a worker thread, so the ingest connection keeps only a high backstop.
      checkpointer = startCheckpointer({
        path,
        writer: database.sqlite,
        onError: (error) => logger.warn({ err: error.message }, 'checkpointer stopped'),
      });
      database.sqlite.pragma('wal_autocheckpoint = 16384');
    },
    async close() {
      await checkpointer?.stop();
      database.close();
      walSync?.close();
      health?.close();
    },
  };
}
