import { describe, expect, it } from 'vitest';
import { createBatcher } from '../../src/core/dispatch/batcher.js';

/** A promise settled from outside, to hold a batch in flight. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('createBatcher (group commit)', () => {
  it('runs items submitted together as one batch and answers each with its own result', async () => {
    const batches: number[][] = [];
    const submit = createBatcher<number, number>({
      execute: async (items) => {
        batches.push([...items]);
        return items.map((i) => i * 10);
      },
      schedule: setImmediate,
    });
    expect(await Promise.all([submit(1), submit(2), submit(3)])).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('holds what arrives during a batch and runs it as one next batch, in order, when that one ends', async () => {
    const batches: number[][] = [];
    const first = gate();
    const submit = createBatcher<number, number>({
      execute: async (items) => {
        batches.push([...items]);
        if (items[0] === 1) await first.promise; // e.g. the first commit's fsync is slow
        return [...items];
      },
      schedule: setImmediate,
    });
    const a = submit(1);
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1]]);
    // Three turns of the event loop while batch 1 is in flight: no batch starts meanwhile.
    const later: Promise<number>[] = [];
    for (const i of [2, 3, 4]) {
      later.push(submit(i));
      await new Promise((r) => setImmediate(r));
    }
    expect(batches).toEqual([[1]]);
    first.open();
    expect(await Promise.all([a, ...later])).toEqual([1, 2, 3, 4]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('with maxInFlight 2, starts a second batch while the first is in flight, and holds a third until one ends', async () => {
    const batches: number[][] = [];
    const gates = new Map<number, ReturnType<typeof gate>>([[1, gate()], [2, gate()]]);
    const submit = createBatcher<number, number>({
      execute: async (items) => {
        batches.push([...items]);
        await gates.get(items[0]!)?.promise;
        return [...items];
      },
      schedule: setImmediate,
      maxInFlight: 2,
    });
    const turn = () => new Promise((r) => setImmediate(r));
    const a = submit(1);
    await turn();
    const b = submit(2);
    await turn();
    expect(batches).toEqual([[1], [2]]); // both at the server at once
    const later = [submit(3), submit(4)];
    await turn();
    expect(batches).toEqual([[1], [2]]); // two in flight: 3 and 4 wait together
    gates.get(2)!.open(); // the second ends first: its caller is answered, the waiting batch starts
    expect(await b).toBe(2);
    await turn();
    expect(batches).toEqual([[1], [2], [3, 4]]);
    gates.get(1)!.open();
    expect(await Promise.all([a, ...later])).toEqual([1, 3, 4]);
  });

  it('rejects every item of a failing batch, and only those; the next batch runs', async () => {
    let calls = 0;
    const submit = createBatcher<number, number>({
      execute: async (items) => {
        calls++;
        if (calls === 1) throw new Error('disk full');
        return [...items];
      },
      schedule: setImmediate,
    });
    const failed = await Promise.allSettled([submit(1), submit(2)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(await submit(3)).toBe(3);
  });

  it('lets lazy items ride on the next urgent batch, or go on their own later schedule', async () => {
    const batches: string[][] = [];
    let lazyFlush: (() => void) | undefined;
    const submit = createBatcher<string, string>({
      execute: async (items) => {
        batches.push([...items]);
        return [...items];
      },
      schedule: setImmediate,
      lazySchedule: (flush) => (lazyFlush = flush),
    });
    const lazy = submit('outcome', { lazy: true });
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([]); // waiting for company
    await submit('claim');
    await lazy;
    expect(batches).toEqual([['outcome', 'claim']]);

    const alone = submit('late outcome', { lazy: true });
    lazyFlush!();
    expect(await alone).toBe('late outcome');
    expect(batches).toEqual([['outcome', 'claim'], ['late outcome']]);
  });
});
