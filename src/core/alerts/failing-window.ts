import type { Clock } from '../clock.js';

export interface FailingWindowOptions {
  clock: Clock;
  /** How far back runs count (15 minutes). */
  windowMs?: number;
  /** Runs are counted per bucket of this length, so memory stays the same at any rate. */
  bucketMs?: number;
  /** Fewer runs than this never count as failing. */
  minRuns?: number;
}

export interface FailingVerdict {
  handler: string;
  runs: number;
  failures: number;
}

export interface FailingWindow {
  /**
   * Counts one run of a handler; returns the counts when the handler now failed more than half of
   * at least `minRuns` runs in the window (checked on failures only), else null.
   */
  record(handler: string, failed: boolean): FailingVerdict | null;
}

/**
 * Recent handler outcomes in a sliding window of per-minute buckets: the window covers the
 * current bucket and the ones before it back to `windowMs`, so what counts is between
 * `windowMs - bucketMs` and `windowMs` old.
 */
export function createFailingWindow({ clock, windowMs = 15 * 60_000, bucketMs = 60_000, minRuns = 5 }: FailingWindowOptions): FailingWindow {
  const size = Math.max(1, Math.round(windowMs / bucketMs));
  const byHandler = new Map<string, { index: number[]; runs: number[]; failures: number[] }>();
  return {
    record(handler, failed) {
      const index = Math.floor(clock() / bucketMs);
      let h = byHandler.get(handler);
      if (!h) byHandler.set(handler, (h = { index: new Array<number>(size).fill(-1), runs: new Array<number>(size).fill(0), failures: new Array<number>(size).fill(0) }));
      const slot = index % size;
      if (h.index[slot] !== index) {
        h.index[slot] = index;
        h.runs[slot] = 0;
        h.failures[slot] = 0;
      }
      h.runs[slot]!++;
      if (failed) h.failures[slot]!++;
      if (!failed) return null;
      let runs = 0;
      let failures = 0;
      for (let i = 0; i < size; i++) {
        if (h.index[i]! > index - size) {
          runs += h.runs[i]!;
          failures += h.failures[i]!;
        }
      }
      return runs >= minRuns && failures * 2 > runs ? { handler, runs, failures } : null;
    },
  };
}
