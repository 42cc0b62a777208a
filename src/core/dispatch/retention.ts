import type { DeliveryStore } from '../delivery-store.js';

export interface PruneExpiredOptions {
  store: Pick<DeliveryStore, 'prune'>;
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
