import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface CheckpointerOptions {
  /** The SQLite file (WAL mode). */
  path: string;
  /** How often to checkpoint (default 250 ms). */
  intervalMs?: number;
}

export interface Checkpointer {
  /** WAL frames written but not yet copied into the database, as of the last checkpoint. */
  framesBehind(): number;
  stop(): Promise<void>;
}

// Runs in a worker thread, as plain CommonJS (no TypeScript loader there).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { timeout: 1000 });
db.pragma('synchronous = FULL');
const timer = setInterval(() => {
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ behind: Math.max(0, r.log - r.checkpointed) });
  } catch (error) { parentPort.postMessage({ error: String(error) }); }
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'stop') { clearInterval(timer); try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} db.close(); parentPort.close(); }
});
`;

/**
 * Moves WAL checkpoints off the ingest thread. SQLite's automatic checkpoint runs inside the
 * COMMIT that crosses 1000 WAL pages: it copies those pages into the database file and fsyncs
 * it, stalling every request waiting on that commit (the p99 spikes of tens of ms seen at a
 * steady rate). Here a worker thread with its own connection runs PASSIVE checkpoints every
 * `intervalMs`: they never block writers, and keep the WAL short so SQLite rewinds it.
 * The ingest connection keeps a high auto-checkpoint threshold as a backstop (open-database.ts).
 */
export function startCheckpointer({ path, intervalMs = 250 }: CheckpointerOptions): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, intervalMs, driver } });
  worker.unref();
  let behind = 0;
  worker.on('message', (m: { behind?: number }) => {
    if (typeof m.behind === 'number') behind = m.behind;
  });
  return {
    framesBehind: () => behind,
    stop: () =>
      new Promise<void>((resolve) => {
        worker.once('exit', () => resolve());
        worker.ref(); // keep the process alive until the last checkpoint is done
        worker.postMessage('stop');
      }),
  };
}
