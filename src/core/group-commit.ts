import type { ClaimResult, NewDelivery } from './delivery.js';

export interface GroupCommitOptions {
  /** Runs one batch in one transaction; resolves after the commit is durable. */
  execute: (batch: readonly NewDelivery[]) => Promise<ClaimResult[]>;
  /** Flush at once when this many are waiting. */
  maxBatch?: number;
  /**
   * Defers the flush so every request that is already readable joins the batch.
   * Node passes `setImmediate` (after the poll phase); the default is a 0 ms timer.
   */
  schedule?: (flush: () => void) => void;
}

/**
 * Group commit: claims that arrive together share one transaction and one sync. Each caller's
 * promise settles after its own batch commits (or fails, so nothing is acknowledged early).
 * Batches run one at a time, in arrival order.
 *
 * @example
 * const claim = createGroupCommit({ execute: store.claim, schedule: setImmediate });
 * const result = await claim(delivery);
 */
export function createGroupCommit({
  execute,
  maxBatch = 512,
  schedule = (flush) => void setTimeout(flush, 0),
}: GroupCommitOptions) {
  type Waiter = { delivery: NewDelivery; resolve: (r: ClaimResult) => void; reject: (e: unknown) => void };
  let waiting: Waiter[] = [];
  let scheduled = false;
  let running: Promise<void> = Promise.resolve();

  const flush = () => {
    scheduled = false;
    if (waiting.length === 0) return;
    const batch = waiting;
    waiting = [];
    running = running.then(async () => {
      try {
        const results = await execute(batch.map((w) => w.delivery));
        batch.forEach((w, i) => w.resolve(results[i]!));
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    });
  };

  return function claim(delivery: NewDelivery): Promise<ClaimResult> {
    return new Promise<ClaimResult>((resolve, reject) => {
      waiting.push({ delivery, resolve, reject });
      if (waiting.length >= maxBatch) flush();
      else if (!scheduled) {
        scheduled = true;
        schedule(flush);
      }
    });
  };
}
