import type { Clock } from '../clock.js';

/**
 * Whether any run waits for an event, as this process knows it: what keeps the ingest check at
 * nearly nothing while no one waits (one comparison per delivery). A wait recorded through this
 * process sets it at once; one recorded by another process (a replica, `podhook replay`) is seen
 * once the flag is older than `refreshMs` and the next delivery reads it again (one query). A new
 * wait therefore looks for its match once more `2 × refreshMs` after it began (`firstLookMs`), so
 * a match another process took before it learned of the wait is not missed.
 */
export interface WaitersFlag {
  /** False only while it is known, and fresh, that no run waits. */
  maybe(): boolean;
  /** Reads it again when stale; resolves whether any run waits. */
  read(): Promise<boolean>;
  /** A wait was recorded (or is known to exist): true from now. */
  set(): void;
  /** How soon a new wait looks again for itself (two refresh periods). */
  readonly firstLookMs: number;
}

export function createWaitersFlag({ anyWaits, clock, refreshMs }: { anyWaits: () => Promise<boolean>; clock: Clock; refreshMs: number }): WaitersFlag {
  let known = false;
  let checkedAt = -Infinity;
  let setAt = -Infinity;
  let reading: Promise<boolean> | undefined;
  const stale = () => clock() - checkedAt >= refreshMs;
  return {
    maybe: () => known || stale(),
    read() {
      if (!stale()) return Promise.resolve(known);
      return (reading ??= (async () => {
        const started = clock();
        try {
          const any = await anyWaits();
          // A wait recorded here while the query ran stays known.
          if (setAt < started) {
            known = any;
            checkedAt = started;
          }
          return known;
        } finally {
          reading = undefined;
        }
      })());
    },
    set() {
      known = true;
      checkedAt = setAt = clock();
    },
    firstLookMs: 2 * refreshMs,
  };
}
