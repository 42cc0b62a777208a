import type { DispatchLoad } from '../dispatch/dispatcher.js';

/** Live deliveries seen within this long ago make the default pacing hold back. */
export const LIVE_QUIET_MS = 1_000;
/** How often a step may run while the dispatcher is idle, and while live deliveries arrive. */
export const STEP_EVERY_MS = 25;
export const LIVE_STEP_EVERY_MS = 250;

/**
 * How many deliveries a backfill may hand this dispatcher now without delaying live ones, and how
 * long to wait before the next step. None while a live delivery is being claimed (a hand-off
 * reserved) or waits for a slot, or the store holds due work the dispatcher could not take;
 * otherwise only the free slots beyond half of DISPATCH_CONCURRENCY (rounded down: with one slot,
 * that slot when idle), so live deliveries always find half the slots free; and while live
 * deliveries arrive (one in the last LIVE_QUIET_MS) one delivery per LIVE_STEP_EVERY_MS at most:
 * the backfill's own work (its requeue, its runs' order and outcome writes) then shares the
 * process's event loop and the database's syncs with live deliveries as little as it can. Pure.
 */
export function backfillBudget({ concurrency, running, waiting, reserved, backlog, lastHandOffAt }: DispatchLoad, now: number): { count: number; nextStepMs: number } {
  const live = lastHandOffAt !== null && now - lastHandOffAt < LIVE_QUIET_MS;
  const nextStepMs = live ? LIVE_STEP_EVERY_MS : STEP_EVERY_MS;
  if (waiting > 0 || reserved > 0 || backlog) return { count: 0, nextStepMs: STEP_EVERY_MS };
  const spare = Math.max(0, concurrency - running - Math.floor(concurrency / 2));
  return { count: live ? Math.min(spare, 1) : spare, nextStepMs };
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
