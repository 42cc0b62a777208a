import type { Clock } from '../core/clock.js';

export interface WriteBucketOptions {
  /** Requests allowed per window (spec: Limits, shared write bucket: 60 a minute per account). */
  limit: number;
  windowMs: number;
  clock: Clock;
}

export interface WriteBucket {
  /** Takes one request from the bucket; when empty, says how long until the window resets. */
  take(): { ok: true } | { ok: false; retryAfterSeconds: number };
}

/** A fixed-window request counter: `limit` requests per `windowMs`, the window starting at its first request. */
export function createWriteBucket({ limit, windowMs, clock }: WriteBucketOptions): WriteBucket {
  let windowStart = -Infinity;
  let used = 0;
  return {
    take() {
      const now = clock();
      if (now - windowStart >= windowMs) {
        windowStart = now;
        used = 0;
      }
      if (used < limit) {
        used++;
        return { ok: true };
      }
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000)) };
    },
  };
}
