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
  /** What it knows, and when it read or set it last. */
  const m = { known: false, checkedAt: -Infinity, setAt: -Infinity };
  let reading: Promise<boolean> | undefined;
  const stale = () => clock() - m.checkedAt >= refreshMs;
  return {
    maybe: () => m.known || stale(),
    read() {
      if (!stale()) return Promise.resolve(m.known);
      return (reading ??= (async () => {
        const started = clock();
        try {
          const any = await anyWaits();
          // A wait recorded here while the query ran stays known.
          if (m.setAt < started) {
            m.known = any;
            m.checkedAt = started;
          }
          return m.known;
        } finally {
          reading = undefined;
        }
      })());
    },
    set() {
      m.known = true;
      m.checkedAt = m.setAt = clock();
    },
    firstLookMs: 2 * refreshMs,
  };
}
