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
  /** Default 4096 frames (16 MB of WAL). */
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
    // A WAL long enough to be rewound: copy what was committed during the pass too (a few more
    // passes at most, each shorter), so the writer's own catch-up checkpoint has little left.
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
 * Moves WAL checkpoints off the ingest thread. SQLite's automatic checkpoint runs inside the
 * COMMIT that crosses 1000 WAL pages: it copies those pages into the database file and fsyncs
 * it, stalling every request waiting on that commit (the p99 spikes of tens of ms seen at a
 * steady rate). Here a worker thread with its own connection runs PASSIVE checkpoints every
 * `intervalMs`: they never block writers, and keep the WAL short so SQLite rewinds it.
 * The ingest connection keeps a high auto-checkpoint threshold as a backstop (node-runtime.ts).
 *
 * Rewinding: SQLite restarts the WAL from its beginning only when a write transaction begins
 * while every frame is already copied. Under steady writes that moment never comes, since some
 * commit always lands while a pass runs (measured: a WAL growing to the 64 MB backstop every
 * 2 s at 1,000 deliveries/s, then one checkpoint of up to 250 ms of frames plus an fsync inside an
 * ingest commit). So when a pass has caught up with a long WAL (passes repeated while commits
 * keep landing, each shorter), it prompts the writer's thread to checkpoint the few frames
 * committed since: a short copy and the syncs, between two commits, and the next commit
 * rewinds the WAL.
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
