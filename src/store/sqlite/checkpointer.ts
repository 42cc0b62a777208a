import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

export interface CheckpointerOptions {
  /** The SQLite file (WAL mode). */
  path: string;
  /** How often to checkpoint (default 250 ms). */
  intervalMs?: number;
  /**
   * The writing connection, on this thread. Once the WAL holds `rewindAtFrames` frames and a
   * pass has copied them all, it runs one more PASSIVE checkpoint itself, so its next commit
   * rewinds the WAL (see below).
   */
  writer?: Database.Database;
  /** WAL length, in frames, from which a caught-up pass prompts the writer to rewind it (default 4096). */
  rewindAtFrames?: number;
  /** The worker thread failed (e.g. its file was deleted); checkpoints stop, the writer's backstop remains. */
  onError?: (error: Error) => void;
}

export interface Checkpointer {
  /** WAL frames written but not yet copied into the database, as of the last checkpoint. */
  framesBehind(): number;
  /** Runs a pass now; resolves when it is done (and the WAL rewound if it was due). */
  passNow(): Promise<void>;
  stop(): Promise<void>;
}

// Runs in a worker thread, as plain CommonJS (no TypeScript loader there).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { timeout: 1000 });
db.pragma('synchronous = FULL');
const pass = () => db.pragma('wal_checkpoint(PASSIVE)')[0];
let lastRun = 0;
const run = () => {
  lastRun = Date.now();
  try {
    let r = pass();
    // Copy what was committed during the pass too, so the writer's catch-up checkpoint has little left.
    for (let i = 0; i < 3 && r.log >= workerData.rewindAtFrames; i++) {
      const before = r.log;
      r = pass();
      if (r.log - before < 64) break;
    }
    parentPort.postMessage({ log: r.log, checkpointed: r.checkpointed });
  } catch (error) { parentPort.postMessage({ error: String(error) }); }
};
// A pass asked for (the prune asks between its bursts) stands in for the next timed one.
const timer = setInterval(() => { if (Date.now() - lastRun >= workerData.intervalMs / 2) run(); }, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'pass') run();
  if (m === 'stop') { clearInterval(timer); try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} db.close(); parentPort.close(); }
});
`;

/**
 * Runs PASSIVE WAL checkpoints every `intervalMs` on a worker thread with its own connection,
 * so no ingest commit pays for SQLite's automatic checkpoint (a copy and an fsync inside COMMIT).
 *
 * SQLite rewinds the WAL only when a write begins with every frame copied, which never happens
 * under steady writes: so once a pass has caught up with a long WAL, the writer checkpoints the
 * few frames committed since, between two commits, and its next commit rewinds the WAL.
 */
export function startCheckpointer({ path, intervalMs = 250, writer, rewindAtFrames = 4096, onError }: CheckpointerOptions): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, intervalMs, driver, rewindAtFrames } });
  worker.unref();
  let behind = 0;
  let waiting: (() => void)[] = [];
  const settle = () => {
    const done = waiting;
    waiting = [];
    for (const resolve of done) resolve();
  };
  let exited = false;
  worker.once('exit', () => {
    exited = true;
    settle();
  });
  worker.on('error', (error) => onError?.(error));
  worker.on('message', (m: { log?: number; checkpointed?: number }) => {
    if (typeof m.log !== 'number' || typeof m.checkpointed !== 'number') return settle();
    behind = Math.max(0, m.log - m.checkpointed);
    if (writer?.open && behind === 0 && m.log >= rewindAtFrames) {
      try {
        writer.pragma('wal_checkpoint(PASSIVE)');
      } catch {
        // Busy or failing: the next pass prompts again, and the auto-checkpoint backstop remains.
      }
    }
    settle();
  });
  return {
    framesBehind: () => behind,
    passNow: () =>
      exited
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            waiting.push(resolve);
            worker.postMessage('pass');
          }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited) return resolve();
        worker.once('exit', () => resolve());
        worker.ref(); // keep the process alive until the last checkpoint is done
        worker.postMessage('stop');
      }),
  };
}
