import { describe, expect, it } from 'vitest';
import type { Delivery } from '../../../src/core/delivery.js';
import { createDispatchSlots, type DispatchSlotsOptions } from '../../../src/core/dispatch/dispatch-slots.js';

const row = (eventId: string) => ({ eventId }) as Delivery;

function setup(options: Partial<DispatchSlotsOptions> = {}) {
  let now = 1000;
  const started: Array<{ id: string; payload: unknown; free: () => void }> = [];
  let drains = 0;
  const slots = createDispatchSlots({
    concurrency: 2,
    handOffQueue: 1,
    leaseMs: 100,
    minLeaseLeftMs: 50,
    clock: () => now,
    start: (d, _ledger, payload, free) => void started.push({ id: d.eventId, payload, free }),
    drainAgain: () => void drains++,
    ...options,
  });
  return { slots, started, drains: () => drains, advance: (ms: number) => (now += ms) };
}

describe('dispatch slots', () => {
  it('reserves up to concurrency plus the hand-off queue, with a lease from now', () => {
    const t = setup();
    const grants = [t.slots.reserve('me'), t.slots.reserve('me'), t.slots.reserve('me')];
    expect(grants).toEqual([{ owner: 'me', until: 1100 }, { owner: 'me', until: 1100 }, { owner: 'me', until: 1100 }]);
    expect(t.slots.reserve('me')).toBeNull();
    t.slots.release();
    expect(t.slots.reserved).toBe(2);
    expect(t.slots.reserve('me')).not.toBeNull();
  });

  it('starts adopted hand-offs while slots are free and queues the rest in arrival order', () => {
    const t = setup();
    const grants = [1, 2, 3].map(() => t.slots.reserve('me')!);
    grants.forEach((g, i) => t.slots.adopt(g, row(`e${i}`), { n: i }));
    expect(t.started.map((s) => [s.id, s.payload])).toEqual([
      ['e0', { n: 0 }],
      ['e1', { n: 1 }],
    ]);
    t.started[0]!.free();
    t.started[0]!.free(); // freeing twice frees one slot
    expect(t.started.map((s) => s.id)).toEqual(['e0', 'e1', 'e2']);
    expect(t.slots.reserve('me')).not.toBeNull();
    expect(t.slots.reserve('me')).toBeNull();
  });

  it('drops a waiting hand-off whose lease no longer covers the longest handler run', () => {
    const t = setup();
    const grants = [1, 2, 3].map(() => t.slots.reserve('me')!);
    grants.forEach((g, i) => t.slots.adopt(g, row(`e${i}`), undefined));
    t.advance(60); // 40 ms left on e2's lease, under the 50 ms minimum
    t.started[0]!.free();
    expect(t.started.map((s) => s.id)).toEqual(['e0', 'e1']);
  });

  it('counts running, waiting and reserved work against what a drain may lease, and drains again once a slot frees', () => {
    const t = setup({ concurrency: 3 });
    t.slots.run(row('a'), []);
    t.slots.reserve('me');
    expect(t.slots.leasable()).toBe(1);
    t.slots.run(row('b'), []);
    expect(t.slots.leasable()).toBe(0);
    expect(t.slots.backlog).toBe(true);
    t.started[0]!.free();
    expect(t.drains()).toBe(1);
    expect(t.slots.backlog).toBe(false);
  });

  it('takes no work once stopped: waiting hand-offs are dropped, nothing is reserved or leased', () => {
    const t = setup({ concurrency: 1 });
    const [g1, g2, g3] = [t.slots.reserve('me')!, t.slots.reserve('me')!, t.slots.reserve('me')];
    expect(g3).toBeNull();
    t.slots.adopt(g1, row('a'), undefined);
    t.slots.adopt(g2, row('b'), undefined);
    t.slots.stop();
    t.started[0]!.free();
    expect(t.started.map((s) => s.id)).toEqual(['a']);
    expect(t.slots.reserve('me')).toBeNull();
    expect(t.slots.leasable()).toBe(0);
  });
});
