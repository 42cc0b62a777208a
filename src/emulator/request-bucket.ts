import type { Clock } from '../core/clock.js';

export interface RequestBucketOptions {
  /** Requests allowed per window (spec: Limits: writes 60 a minute, reads 240 a minute, key mints 30 an hour, per account). */
  limit: number;
  windowMs: number;
  clock: Clock;
}

export interface RequestBucket {
  /** Takes one request from the bucket; when empty, says how long until the window resets. */
  take(): { ok: true } | { ok: false; retryAfterSeconds: number };
  /** Requests let through and refused so far (tests count calls per bucket). */
  counts(): { allowed: number; refused: number };
}

/**
 * A fixed-window request counter: `limit` requests per `windowMs`, the window starting at its first
 * request. The emulator keeps one per bucket of the spec (writes, reads, key mints).
 */
export function createRequestBucket({ limit, windowMs, clock }: RequestBucketOptions): RequestBucket {
  let windowStart = -Infinity;
  let used = 0;
  let allowed = 0;
  let refused = 0;
  return {
    take() {
      const now = clock();
      if (now - windowStart >= windowMs) {
        windowStart = now;
        used = 0;
      }
      if (used < limit) {
        used++;
        allowed++;
        return { ok: true };
      }
      refused++;
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000)) };
    },
    counts: () => ({ allowed, refused }),
  };
}
