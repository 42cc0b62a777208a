import type { DispatchLoad } from '../dispatch/dispatcher.js';

/**
 * How many deliveries a backfill may hand this dispatcher now without delaying live ones: none
 * while live hand-offs wait for a slot or the store holds due work the dispatcher could not take,
 * and otherwise only the free slots beyond half of DISPATCH_CONCURRENCY (rounded down), so live
 * deliveries always find half the slots free (with DISPATCH_CONCURRENCY=1: the slot, when idle).
 */
export function spareForBackfill({ concurrency, running, waiting, reserved, backlog }: DispatchLoad): number {
  if (waiting > 0 || backlog) return 0;
  const free = concurrency - running - reserved;
  return Math.max(0, free - Math.floor(concurrency / 2));
}

/** `--rate N/s` as a token bucket: up to one second of deliveries at once, empty at first. */
export interface RateBucket {
  tokens: number;
  at: number;
}

/**
 * Takes up to `want` deliveries from the bucket of a backfill paced at `rate` per second, refilled
 * since it was last read (a new bucket starts empty, so no second holds more than `rate`). Pure:
 * resolves with how many it may take and the bucket after.
 */
export function takeFromRate(bucket: RateBucket | undefined, rate: number, now: number, want: number): { take: number; bucket: RateBucket } {
  const tokens = bucket === undefined ? 0 : Math.min(rate, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * rate);
  const take = Math.max(0, Math.min(want, Math.floor(tokens)));
  return { take, bucket: { tokens: tokens - take, at: now } };
}
