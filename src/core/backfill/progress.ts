import { isoTime } from '../steps/time-or-duration.js';
import type { Backfill } from './backfill-store.js';

/** The window the rate is measured over. */
export const RATE_WINDOW_MS = 60_000;
/** The shortest span a rate is shown over: two steps milliseconds apart say nothing of the pace. */
export const MIN_RATE_SPAN_MS = 1_000;

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
  /** Deliveries passed per second over the last minute (null over less than MIN_RATE_SPAN_MS, and once not running). */
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
  const ratePerSecond = b.state === 'running' && first && last && span >= MIN_RATE_SPAN_MS ? ((last[1] - first[1]) * 1000) / span : null;
  const end = ratePerSecond === null ? null : remaining === 0 ? now : ratePerSecond > 0 ? Math.round(now + (remaining / ratePerSecond) * 1000) : null;
  // A crawl so slow its end is past any date a clock can show has no estimated end.
  const estimatedEnd = end !== null && isoTime(end) !== null ? end : null;
  return { done, remaining, ratePerSecond, estimatedEnd };
}


/** A backfill as the admin API and `podhook backfill --status --json` show it. */
export function backfillJson(b: Backfill, now: number) {
  const p = backfillProgress(b, now);
  return {
    id: b.id,
    handler: b.handler,
    state: b.state,
    event_type: b.eventType,
    since: isoTime(b.since),
    until: isoTime(b.until),
    rate: b.rate,
    total: b.total,
    requeued: b.requeued,
    skipped: b.skipped,
    remaining: p.remaining,
    rate_per_second: p.ratePerSecond === null ? null : Math.round(p.ratePerSecond * 10) / 10,
    estimated_end: isoTime(p.estimatedEnd),
    cursor: b.cursor ? { received_at: isoTime(b.cursor.receivedAt), event_id: b.cursor.eventId } : null,
    running_on: b.state === 'running' && b.lease && b.lease.until >= now ? b.lease.owner : null,
    created_at: isoTime(b.createdAt),
    updated_at: isoTime(b.updatedAt),
    finished_at: isoTime(b.finishedAt),
    error: b.error,
  };
}

export type BackfillJson = ReturnType<typeof backfillJson>;
