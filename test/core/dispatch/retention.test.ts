import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPrunePause, pruneExpired } from '../../../src/core/dispatch/retention.js';

/** A store holding `rows` expired rows; each deleted row advances `clock.ms` by `msPerRow`. */
function fakeStore(rows: number, clock: { ms: number }, msPerRow: number) {
  const sizes: number[] = [];
  let left = rows;
  return {
    sizes,
    left: () => left,
    store: {
      async prune({ limit }: { before: number; limit: number }) {
        sizes.push(limit);
        const removed = Math.min(limit, left);
        left -= removed;
        clock.ms += removed * msPerRow;
        return removed;
      },
    },
  };
}

describe('pruneExpired', () => {
  it('sizes chunks to the time target: halves a slow chunk, grows a fast one, stops at a short one', async () => {
    const clock = { ms: 0 };
    // Deleting a row costs 0.1 ms of clock here (a real one: a few µs to tens of µs).
    const { store, sizes, left } = fakeStore(5000, clock, 0.1);
    const pauses: number[] = [];
    const total = await pruneExpired({ store, before: 0, chunk: 200, targetMs: 5, now: () => clock.ms, pause: async () => void pauses.push(clock.ms) });
    expect(total).toBe(5000);
    expect(left()).toBe(0);
    expect(sizes.slice(0, 4)).toEqual([200, 100, 50, 50]); // 20 ms, 10 ms: halved; 5 ms: kept
    expect(Math.max(...sizes.slice(2))).toBeLessThanOrEqual(50);
    expect(pauses.length).toBe(sizes.length - 1); // a pause between chunks, none after the last
  });

  it('grows chunks that finish well under the target, up to a cap', async () => {
    const { store, sizes } = fakeStore(100_000, { ms: 0 }, 0);
    await pruneExpired({ store, before: 0, now: () => 0 });
    expect(sizes[0]).toBe(100);
    expect(sizes[1]).toBe(150);
    expect(Math.max(...sizes)).toBe(2000);
  });
});

/** Timer-based sleep and clock under vitest's fake timers, recording each sleep. */
function fakeTime() {
  vi.useFakeTimers();
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => Date.now(),
    sleep: (ms: number) => {
      sleeps.push(ms);
      return new Promise<void>((r) => setTimeout(r, ms));
    },
  };
}

describe('createPrunePause', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('only keeps the gap between chunks when no checkpointer runs', async () => {
    const time = fakeTime();
    const pause = createPrunePause({ sleep: time.sleep, now: time.now });
    for (let i = 0; i < 30; i++) {
      const p = pause();
      await vi.advanceTimersByTimeAsync(2);
      await p;
    }
    expect(time.sleeps).toEqual(new Array(30).fill(2));
  });

  it('after each burst lets a checkpoint pass run, then rests as long as the pass took', async () => {
    const time = fakeTime();
    let passes = 0;
    const checkpointer = {
      passNow: () => {
        passes++;
        return new Promise<void>((r) => setTimeout(r, 7));
      },
      framesBehind: () => 0,
    };
    const pause = createPrunePause({ sleep: time.sleep, now: time.now, checkpointer });
    const start = Date.now();
    await vi.advanceTimersByTimeAsync(10); // a chunk of pruning, under the 20 ms burst
    let p = pause();
    await vi.advanceTimersByTimeAsync(2);
    await p;
    expect(passes).toBe(0);
    await vi.advanceTimersByTimeAsync(10); // 22 ms of pruning: a pass runs, then a rest as long (7 ms)
    p = pause();
    await vi.advanceTimersByTimeAsync(2 + 7 + 7);
    await p;
    expect(passes).toBe(1);
    expect(Date.now() - start).toBe(38);
    expect(time.sleeps).toEqual([2, 2, 2000, 7]);
    p = pause(); // the burst starts again after the rest
    await vi.advanceTimersByTimeAsync(2);
    await p;
    expect(passes).toBe(1);
  });

  it('waits while the checkpoint is too far behind, but never longer than its limit', async () => {
    const time = fakeTime();
    let behind = 5000;
    const checkpointer = { passNow: async () => {}, framesBehind: () => behind };
    const pause = createPrunePause({ sleep: time.sleep, now: time.now, checkpointer, burstMs: 1e9, maxWaitMs: 100, pollMs: 25 });
    let p = pause();
    await vi.advanceTimersByTimeAsync(2 + 100);
    await p;
    expect(time.sleeps).toEqual([2, 25, 25, 25, 25]);
    p = pause();
    await vi.advanceTimersByTimeAsync(30);
    behind = 10; // caught up: the wait ends at the next look
    await vi.advanceTimersByTimeAsync(25);
    await p;
    expect(time.sleeps.slice(5)).toEqual([2, 25, 25]);
  });
});
