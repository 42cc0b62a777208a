import { GIVE_UP_AFTER_MS, RETRY_OFFSETS_MS } from '../ingest/sender-retry-ladder.js';

/** A time the receiver did not answer: from its last heartbeat until it came back (epoch ms). */
export interface Downtime {
  from: number;
  until: number;
}

/** What the sender's ladder means for the deliveries it sent during a downtime. */
export interface RetryOutlook {
  downtimeMs: number;
  /**
   * Every delivery sent during the downtime whose retries are not exhausted gets its next
   * retry by this time (epoch ms); null when the service has probably given up on all of them.
   */
  retriesDueBy: number | null;
  /**
   * The downtime outlasted the whole ladder (more than about 22.4 hours): a delivery sent at its
   * start had all seven retries refused, so the service has probably set `disabled_by_us_at` and stopped delivering.
   */
  probablyDisabled: boolean;
  /** About when the service gave up on the first delivery it sent during the downtime (when `probablyDisabled`). */
  disabledAround: number | null;
}

/**
 * Reads a downtime against the sender's ladder. A delivery first sent at `s` during the
 * downtime is retried at `s + offset`; the retries that fall after `until` reach the receiver.
 * The latest "next retry" over every `s` in the downtime is `until` plus the widest gap between
 * consecutive retries that a delivery could be waiting in.
 *
 * @example
 * retryOutlook({ from: t, until: t + 10 * 60_000 }).retriesDueBy; // t + 10 min + 15 min
 */
export function retryOutlook({ from, until }: Downtime): RetryOutlook {
  const downtimeMs = Math.max(0, until - from);
  const probablyDisabled = downtimeMs > GIVE_UP_AFTER_MS;
  // A delivery that has waited `w` (0 < w <= downtime) at `until` is retried at the first offset
  // after `w`: the wait after `until` is that offset minus `w`, largest just past an earlier offset.
  let worstWait = 0;
  const starts = [0, ...RETRY_OFFSETS_MS];
  for (let i = 0; i < RETRY_OFFSETS_MS.length; i++) {
    const waitedAtLeast = starts[i]!;
    if (waitedAtLeast >= downtimeMs) break;
    worstWait = Math.max(worstWait, RETRY_OFFSETS_MS[i]! - waitedAtLeast);
  }
  return {
    downtimeMs,
    // Once the service has disabled the webhook it sends nothing more, retries included.
    retriesDueBy: probablyDisabled || worstWait === 0 ? null : until + worstWait,
    probablyDisabled,
    disabledAround: probablyDisabled ? from + GIVE_UP_AFTER_MS : null,
  };
}
