import type { Backfill } from './backfill-store.js';

/** The window the rate is measured over. */
export const RATE_WINDOW_MS = 60_000;

/**
 * The progress samples after a step: this one added, the ones older than the window dropped but
 * never the last two (the Worker steps once a minute). Pure.
 */
export function nextRecent(recent: readonly [number, number][], now: number, done: number): [number, number][] {
  const all = [...recent, [now, done] as [number, number]];
  const fresh = all.filter(([at]) => now - at <= RATE_WINDOW_MS);
  return fresh.length >= 2 ? fresh : all.slice(-2);
}

export interface BackfillProgress {
  /** Deliveries passed: handed to the dispatcher, or skipped as already handled. */
  done: number;
  remaining: number;
  /** Deliveries passed per second over the last minute (null before two samples). */
  ratePerSecond: number | null;
  /** When it should be done at that rate (epoch ms), null when not known or not running. */
  estimatedEnd: number | null;
}

/** A backfill's progress as the admin API, the inspector, the CLI and /metrics show it. Pure. */
export function backfillProgress(b: Pick<Backfill, 'state' | 'total' | 'requeued' | 'skipped' | 'recent'>, now: number): BackfillProgress {
  const done = b.requeued + b.skipped;
  const remaining = b.state === 'running' ? Math.max(0, b.total - done) : 0;
  const first = b.recent[0];
  const last = b.recent.at(-1);
  const span = first && last ? last[0] - first[0] : 0;
  const ratePerSecond = first && last && span > 0 ? ((last[1] - first[1]) * 1000) / span : null;
  const estimatedEnd =
    b.state !== 'running' || ratePerSecond === null ? null : remaining === 0 ? now : ratePerSecond > 0 ? Math.round(now + (remaining / ratePerSecond) * 1000) : null;
  return { done, remaining, ratePerSecond, estimatedEnd };
}
