import type { DeliveryStore } from './delivery-store.js';

export interface PruneExpiredOptions {
  store: Pick<DeliveryStore, 'prune'>;
  /** Rows received before this time (ms) may go. */
  before: number;
  /** Rows per transaction (default 500). */
  chunk?: number;
  /** Awaited between chunks (Node yields a turn of the event loop so ingest never stalls). */
  pause?: () => Promise<void>;
}

/**
 * Deletes processed and ignored deliveries received before `before`, in small transactions,
 * until none is left; resolves with how many went. `dead` rows stay (spec: retention).
 */
export async function pruneExpired({ store, before, chunk = 500, pause }: PruneExpiredOptions): Promise<number> {
  let total = 0;
  for (;;) {
    const removed = await store.prune({ before, limit: chunk });
    total += removed;
    if (removed < chunk) return total;
    await pause?.();
  }
}
