import { describe, expect, it } from 'vitest';
import { createWaitersFlag } from '../../../src/core/waits/waiters-flag.js';

function setup(initial = false) {
  let now = 1_000;
  let any = initial;
  let reads = 0;
  let release: (() => void) | undefined;
  let held = false;
  const flag = createWaitersFlag({
    anyWaits: async () => {
      reads++;
      if (held) await new Promise<void>((resolve) => (release = resolve));
      return any;
    },
    clock: () => now,
    refreshMs: 100,
  });
  return {
    flag,
    reads: () => reads,
    advance: (ms: number) => void (now += ms),
    setAny: (v: boolean) => void (any = v),
    hold: () => void (held = true),
    release: () => {
      held = false;
      release?.();
    },
  };
}

describe('the "does any run wait" flag of a process', () => {
  it('is read once, then answers from memory while fresh: no store read per delivery while no run waits', async () => {
    const t = setup();
    expect(t.flag.maybe()).toBe(true); // never read: it may
    expect(await t.flag.read()).toBe(false);
    for (let i = 0; i < 50; i++) {
      t.advance(1);
      expect(t.flag.maybe()).toBe(false);
    }
    expect(t.reads()).toBe(1);
  });

  it("sees another process's wait once stale (refreshMs), and a wait recorded here at once", async () => {
    const t = setup();
    await t.flag.read();
    t.setAny(true); // another process's wait
    t.advance(99);
    expect(t.flag.maybe()).toBe(false);
    t.advance(1);
    expect(t.flag.maybe()).toBe(true);
    expect(await t.flag.read()).toBe(true);
    expect(t.reads()).toBe(2);

    const u = setup();
    await u.flag.read();
    u.flag.set();
    expect(u.flag.maybe()).toBe(true);
    expect(await u.flag.read()).toBe(true);
    expect(u.reads()).toBe(1);
    expect(u.flag.firstLookMs).toBe(200);
  });

  it('a wait recorded here while a read is under way is not undone by that read', async () => {
    const t = setup();
    t.hold();
    const reading = t.flag.read();
    t.advance(5);
    t.flag.set();
    t.release();
    expect(await reading).toBe(true);
    expect(t.flag.maybe()).toBe(true);
    expect(await t.flag.read()).toBe(true);
  });

  it('reads at the same time share one query', async () => {
    const t = setup(true);
    const [a, b] = await Promise.all([t.flag.read(), t.flag.read()]);
    expect([a, b]).toEqual([true, true]);
    expect(t.reads()).toBe(1);
  });
});
