export interface BatcherOptions<I, O> {
  /** Runs one batch (one transaction, one sync); resolves with one result per item, in order. */
  execute: (batch: readonly I[]) => Promise<O[]>;
  /** Flush at once when this many are waiting. */
  maxBatch?: number;
  /**
   * Batches that may run at once (default 1). A store whose commits run elsewhere (PostgreSQL)
   * may take a second batch while the first waits on the server, so the process is not idle.
   */
  maxInFlight?: number;
  /**
   * Defers the flush so every item already on its way joins the batch. Node passes
   * `setImmediate` (after the poll phase has read every ready socket); default a 0 ms timer.
   */
  schedule?: (flush: () => void) => void;
  /**
   * How a batch holding only lazy items is flushed (default: as `schedule`). Lazy items ride on
   * the next flush that something urgent triggers, or on this later one.
   */
  lazySchedule?: (flush: () => void) => void;
}

/**
 * Group commit: items submitted together share one `execute` call. Each caller's promise
 * settles after its own batch has run (or failed, so nothing is acknowledged early). Batches
 * start in submission order, one at a time unless `maxInFlight` allows more. Ingest uses it
 * for claims, the dispatcher for recording handler outcomes.
 *
 * @example
 * const claim = createBatcher({ execute: store.claim, schedule: setImmediate });
 * const result = await claim(delivery); // settles after the batch's commit
 */
export function createBatcher<I, O>({
  execute,
  maxBatch = 512,
  maxInFlight = 1,
  schedule = (flush) => void setTimeout(flush, 0),
  lazySchedule = schedule,
}: BatcherOptions<I, O>): (item: I, options?: { lazy?: boolean }) => Promise<O> {
  type Waiter = { item: I; resolve: (r: O) => void; reject: (e: unknown) => void };
  let waiting: Waiter[] = [];
  let scheduled = false;
  let lazyScheduled = false;
  // `maxInFlight` batches at a time (one by default). Items that arrive meanwhile wait and go
  // together in the next batch as soon as one finishes: the slower a commit, the larger the next one.
  let inFlight = 0;
  let flushAfter = false;

  const flush = () => {
    scheduled = false;
    if (inFlight >= maxInFlight) {
      flushAfter = waiting.length > 0;
      return;
    }
    if (waiting.length === 0) return;
    lazyScheduled = false; // a pending lazy flush finds nothing, or only what came later
    const batch = waiting;
    waiting = [];
    inFlight++;
    void (async () => {
      try {
        const results = await execute(batch.map((w) => w.item));
        batch.forEach((w, i) => w.resolve(results[i]!));
      } catch (error) {
        for (const w of batch) w.reject(error);
      } finally {
        inFlight--;
        if (flushAfter) {
          flushAfter = false;
          flush();
        }
      }
    })();
  };

  const lazyFlush = () => {
    if (lazyScheduled && !scheduled) flush();
  };

  return function submit(item: I, { lazy = false } = {}): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (waiting.length >= maxBatch) flush();
      else if (!lazy && !scheduled) {
        scheduled = true;
        schedule(flush);
      } else if (lazy && !scheduled && !lazyScheduled) {
        lazyScheduled = true;
        lazySchedule(lazyFlush);
      }
    });
  };
}
