import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backfillBudget, LIVE_QUIET_MS, LIVE_STEP_EVERY_MS, STEP_EVERY_MS, takeFromRate, type RateBucket } from '../../../src/core/backfill/pacing.js';
import { backfillProgress, MIN_RATE_SPAN_MS, nextRecent } from '../../../src/core/backfill/progress.js';
import type { DispatchLoad } from '../../../src/core/dispatch/dispatcher.js';

const idle = (concurrency: number): DispatchLoad => ({ concurrency, running: 0, waiting: 0, reserved: 0, backlog: false, lastHandOffAt: null, leases: 0 });

describe('backfill pacing: what the dispatcher can spare', () => {
  const NOW = 1_000_000;
  const count = (load: DispatchLoad) => backfillBudget(load, NOW).count;

  it('offers only the free slots beyond half of the concurrency, and none while live work is claimed or waits', () => {
    expect(backfillBudget(idle(16), NOW)).toEqual({ count: 8, nextStepMs: STEP_EVERY_MS });
    expect(count({ ...idle(16), running: 5 })).toBe(3);
    expect(count({ ...idle(16), running: 8 })).toBe(0);
    expect(count({ ...idle(16), running: 3, reserved: 1 })).toBe(0); // a live claim in flight
    expect(count({ ...idle(16), waiting: 1 })).toBe(0);
    expect(count({ ...idle(16), backlog: true })).toBe(0);
    expect(count(idle(1))).toBe(1); // one slot: taken only when idle
    expect(count({ ...idle(1), running: 1 })).toBe(0);
    expect(count(idle(2))).toBe(1);
  });

  it('while live deliveries arrive, one delivery per step and a slower step', () => {
    const live = { ...idle(16), lastHandOffAt: NOW - 200 };
    expect(backfillBudget(live, NOW)).toEqual({ count: 1, nextStepMs: LIVE_STEP_EVERY_MS });
    expect(backfillBudget({ ...live, running: 8 }, NOW)).toEqual({ count: 0, nextStepMs: LIVE_STEP_EVERY_MS });
    expect(backfillBudget({ ...idle(16), lastHandOffAt: NOW - LIVE_QUIET_MS }, NOW)).toEqual({ count: 8, nextStepMs: STEP_EVERY_MS });
  });

  it('never leaves live deliveries fewer than half the slots (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 256 }), fc.nat(300), fc.nat(3), fc.option(fc.nat(5_000)), (concurrency, running, reserved, ago) => {
        const spare = count({ concurrency, running, reserved, waiting: 0, backlog: false, lastHandOffAt: ago === null ? null : NOW - ago, leases: 0 });
        expect(spare).toBeGreaterThanOrEqual(0);
        if (spare > 0) expect(concurrency - running - reserved - spare).toBeGreaterThanOrEqual(Math.floor(concurrency / 2));
        if (reserved > 0) expect(spare).toBe(0);
        if (ago !== null && ago < LIVE_QUIET_MS) expect(spare).toBeLessThanOrEqual(1);
      }),
    );
  });

  it('paces to --rate per second with a bucket of one second', () => {
    let bucket: RateBucket | undefined;
    const take = (now: number, want: number) => {
      const r = takeFromRate(bucket, 10, now, want);
      bucket = r.bucket;
      return r.take;
    };
    expect(take(0, 50)).toBe(0); // empty at first: no burst beyond the rate
    expect(take(100, 50)).toBe(1);
    expect(take(100, 50)).toBe(0);
    expect(take(600, 3)).toBe(3);
    expect(take(5_000, 50)).toBe(10); // never more than a second's worth
    // Over a long run, the rate holds: 10 s at 10/s, plus at most the one second the bucket held.
    let total = 0;
    for (let t = 10_000; t < 20_000; t += 25) total += take(t, 8);
    expect(total).toBeGreaterThanOrEqual(100);
    expect(total).toBeLessThanOrEqual(110);
    // From a new bucket, no second holds more than the rate.
    bucket = undefined;
    let first = 0;
    for (let t = 30_000; t <= 31_000; t += 25) first += take(t, 8);
    expect(first).toBeLessThanOrEqual(10);
  });
});

describe('backfill progress', () => {
  it('keeps the last minute of samples (never fewer than two) and measures the rate and the end over them', () => {
    let recent: [number, number][] = [];
    for (let t = 0; t <= 90_000; t += 10_000) recent = nextRecent(recent, t, t / 100);
    expect(recent[0]).toEqual([30_000, 300]);
    expect(recent.at(-1)).toEqual([90_000, 900]);
    const p = backfillProgress({ state: 'running', total: 2_000, requeued: 850, skipped: 50, recent }, 90_000);
    expect(p).toEqual({ done: 900, remaining: 1_100, ratePerSecond: 10, estimatedEnd: 90_000 + 110_000 });
    // The Worker steps once a minute: the last two samples still give a rate.
    const sparse = nextRecent(nextRecent([], 0, 0), 120_000, 25);
    expect(sparse).toEqual([[0, 0], [120_000, 25]]);
    expect(backfillProgress({ state: 'done', total: 25, requeued: 25, skipped: 0, recent: sparse }, 130_000)).toMatchObject({ remaining: 0, estimatedEnd: null });
    expect(backfillProgress({ state: 'running', total: 10, requeued: 0, skipped: 0, recent: [] }, 1)).toEqual({ done: 0, remaining: 10, ratePerSecond: null, estimatedEnd: null });
  });

  it('shows a rate only over a meaningful interval, and none once the backfill stopped', () => {
    // Two samples 3 ms apart at the start: 1 delivery in 3 ms is no rate of 333/s.
    const burst = nextRecent(nextRecent([], 1_000, 0), 1_003, 1);
    expect(backfillProgress({ state: 'running', total: 100, requeued: 1, skipped: 0, recent: burst }, 1_003)).toEqual({ done: 1, remaining: 99, ratePerSecond: null, estimatedEnd: null });
    // Over MIN_RATE_SPAN_MS it is measured.
    const second = nextRecent(burst, 1_000 + MIN_RATE_SPAN_MS, 2);
    expect(backfillProgress({ state: 'running', total: 100, requeued: 2, skipped: 0, recent: second }, 1_000 + MIN_RATE_SPAN_MS).ratePerSecond).toBeCloseTo(2_000 / MIN_RATE_SPAN_MS);
    // A backfill that failed, finished or was cancelled runs at no rate, whatever its last samples said.
    const recent = nextRecent(nextRecent([], 0, 0), 10_000, 100);
    for (const state of ['failed', 'done', 'cancelled'] as const) {
      expect(backfillProgress({ state, total: 200, requeued: 100, skipped: 0, recent }, 20_000)).toEqual({ done: 100, remaining: 0, ratePerSecond: null, estimatedEnd: null });
    }
    // A rate too slow for an end a clock can show has no estimated end (it never throws).
    const crawl: [number, number][] = [[0, 0], [1e9, 1]];
    expect(backfillProgress({ state: 'running', total: 1e9, requeued: 1, skipped: 0, recent: crawl }, 1e9).estimatedEnd).toBeNull();
  });
});
