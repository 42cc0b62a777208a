import { describe, expect, it } from 'vitest';
import { pruneExpired } from '../../../src/core/dispatch/retention.js';

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
