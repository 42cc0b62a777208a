import type { MaintenanceStore } from '../delivery-store.js';

export interface PruneExpiredOptions {
  store: Pick<MaintenanceStore, 'prune'>;
  /** Rows received before this time (ms) may go. */
  before: number;
  /** Rows in the first transaction (default 100); later ones adapt to `targetMs`. */
  chunk?: number;
  /**
   * How long one chunk may take (default 5 ms). On Node a chunk shares the group commit with
   * waiting deliveries, so its duration is added to their answer: chunks shrink or grow to fit.
   */
  targetMs?: number;
  /** Awaited between chunks, so ingest gets the database in between. */
  pause?: () => Promise<void>;
  /** Milliseconds, for timing chunks. */
  now?: () => number;
}

const MIN_CHUNK = 10;
const MAX_CHUNK = 2000;

/**
 * Deletes processed and ignored deliveries received before `before`, in small transactions,
 * until none is left; resolves with how many went. `dead` rows stay (spec: retention).
 */
export async function pruneExpired({
  store,
  before,
  chunk = 100,
  targetMs = 5,
  pause,
  now = () => performance.now(),
}: PruneExpiredOptions): Promise<number> {
  let total = 0;
  let size = chunk;
  for (;;) {
    const started = now();
    const removed = await store.prune({ before, limit: size });
    const took = now() - started;
    total += removed;
    if (removed < size) return total;
    if (took > targetMs) size = Math.max(MIN_CHUNK, Math.floor(size / 2));
    else if (took < targetMs / 2) size = Math.min(MAX_CHUNK, Math.ceil(size * 1.5));
    await pause?.();
  }
}

/** What prune pacing needs from a checkpointer running beside the writer (Node's worker thread). */
export interface CheckpointProgress {
  /** Runs a checkpoint pass now; resolves once it is done. */
  passNow(): Promise<unknown>;
  /** WAL frames written but not yet copied back into the database. */
  framesBehind(): number;
}

export interface PrunePauseOptions {
  /** Resolves after `ms` (Node: a timer). */
  sleep: (ms: number) => Promise<void>;
  /** Milliseconds from a monotonic clock (Node: `performance.now`). */
  now: () => number;
  /** The checkpointer, if one runs; without one only the gap between chunks is kept. */
  checkpointer?: CheckpointProgress;
  /** Pause between chunks, so deliveries that arrived meanwhile commit without one (default 2 ms). */
  gapMs?: number;
  /** Pruning time after which a checkpoint pass runs while the prune waits (default 20 ms). */
  burstMs?: number;
  /** While the checkpoint is this many frames behind (a reader holds it back), the prune waits (default 4096). */
  maxFramesBehind?: number;
  /** The longest a pass, the rest after it, or the wait for frames may take per chunk (default 2 s). */
  maxWaitMs?: number;
  /** How often frames behind are read while waiting (default 25 ms). */
  pollMs?: number;
}

/**
 * The `pause` for one `pruneExpired` run on a WAL database with a checkpointer beside it. A
 * prune writes WAL pages faster than a concurrent pass copies them (its index deletes land on
 * random pages), so unpaced it makes checkpoints and syncs long enough to stall ingest: after
 * each burst it lets a pass run, then rests as long as the pass took (a slow pass means a busy
 * disk, where every delivery's sync is waiting too).
 */
export function createPrunePause({
  sleep,
  now,
  checkpointer,
  gapMs = 2,
  burstMs = 20,
  maxFramesBehind = 4096,
  maxWaitMs = 2000,
  pollMs = 25,
}: PrunePauseOptions): () => Promise<void> {
  let burst = now();
  return async function prunePause() {
    await sleep(gapMs);
    if (!checkpointer) return;
    if (now() - burst >= burstMs) {
      const asked = now();
      await Promise.race([checkpointer.passNow(), sleep(maxWaitMs)]);
      await sleep(Math.min(maxWaitMs, now() - asked));
      burst = now();
    }
    for (let waited = 0; waited < maxWaitMs && checkpointer.framesBehind() > maxFramesBehind; waited += pollMs) await sleep(pollMs);
  };
}
