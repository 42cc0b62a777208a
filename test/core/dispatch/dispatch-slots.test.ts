import { describe, expect, it } from 'vitest';
import type { Delivery } from '../../../src/core/delivery.js';
import { createDispatchSlots, type DispatchSlotsOptions } from '../../../src/core/dispatch/dispatch-slots.js';

const row = (eventId: string) => ({ eventId }) as Delivery;

function setup(options: Partial<DispatchSlotsOptions> = {}) {
  const lost = new Set<string>();
  const dropped: string[] = [];
  const started: Array<{ id: string; payload: unknown; free: () => void }> = [];
  let drains = 0;
  const slots = createDispatchSlots({
    concurrency: 2,
    handOffQueue: 1,
    holds: (id, claimId) => !lost.has(id) && claimId === `claim-${id}`,
    dropped: (id, claimId) => void dropped.push(`${id}/${claimId}`),
    start: (d, _ledger, payload, free) => void started.push({ id: d.eventId, payload, free }),
    drainAgain: () => void drains++,
    ...options,
  });
  return { slots, started, dropped, drains: () => drains, lose: (id: string) => lost.add(id) };
}

describe('dispatch slots', () => {
  it('reserves up to concurrency plus the hand-off queue', () => {
    const t = setup();
    expect([t.slots.reserve(), t.slots.reserve(), t.slots.reserve()]).toEqual([true, true, true]);
    expect(t.slots.reserve()).toBe(false);
    t.slots.release();
    expect(t.slots.reserved).toBe(2);
    expect(t.slots.reserve()).toBe(true);
  });

  it('starts adopted hand-offs while slots are free and queues the rest in arrival order', () => {
    const t = setup();
    [1, 2, 3].forEach(() => t.slots.reserve());
    [0, 1, 2].forEach((i) => t.slots.adopt(row(`e${i}`), { n: i }, `claim-e${i}`));
    expect(t.started.map((s) => [s.id, s.payload])).toEqual([
      ['e0', { n: 0 }],
      ['e1', { n: 1 }],
    ]);
    t.started[0]!.free();
    t.started[0]!.free(); // freeing twice frees one slot
    expect(t.started.map((s) => s.id)).toEqual(['e0', 'e1', 'e2']);
    expect(t.slots.reserve()).toBe(true);
    expect(t.slots.reserve()).toBe(false);
  });

  it('drops a waiting hand-off whose lease was lost while it waited, and says so under its claim', () => {
    const t = setup();
    [1, 2, 3].forEach(() => t.slots.reserve());
    [0, 1, 2].forEach((i) => t.slots.adopt(row(`e${i}`), undefined, `claim-e${i}`));
    t.lose('e2');
    t.started[0]!.free();
    expect(t.started.map((s) => s.id)).toEqual(['e0', 'e1']);
    expect(t.dropped).toEqual(['e2/claim-e2']);
  });

  it('counts running, waiting and reserved work against what a drain may lease, and drains again once a slot frees', () => {
    const t = setup({ concurrency: 3 });
    t.slots.run(row('a'), []);
    t.slots.reserve();
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
    expect([t.slots.reserve(), t.slots.reserve(), t.slots.reserve()]).toEqual([true, true, false]);
    t.slots.adopt(row('a'), undefined, 'claim-a');
    t.slots.adopt(row('b'), undefined, 'claim-b');
    t.slots.stop();
    t.started[0]!.free();
    expect(t.started.map((s) => s.id)).toEqual(['a']);
    expect(t.slots.reserve()).toBe(false);
    expect(t.slots.leasable()).toBe(0);
  });
});
