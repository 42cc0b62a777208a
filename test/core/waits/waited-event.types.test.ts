// Type tests: checked by `tsc --noEmit` (part of `npm test`); the `it` blocks check the same at run time.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { defineHandler, type EventPayload, type WaitedEvent } from 'podhook';
import { waitedEvent } from '../../../src/core/waits/waited-event.js';

describe('what ctx.waitForEvent resolves with, typed', () => {
  it('is narrowed by `type`: one type, or the union of a list, or null', () => {
    defineHandler('pod.backup.failed', async (_event, { waitForEvent }) => {
      const one = await waitForEvent('renewed', { type: 'pod.renewed', timeout: '30m' });
      expectTypeOf(one).toEqualTypeOf<WaitedEvent<'pod.renewed'> | null>();
      if (one) {
        expectTypeOf(one.type).toEqualTypeOf<'pod.renewed'>();
        expectTypeOf(one.payload).toEqualTypeOf<EventPayload<'pod.renewed'>>();
        expectTypeOf(one.receivedAt).toEqualTypeOf<Date>();
      }
      const either = await waitForEvent('back', { type: ['pod.active', 'pod.status.changed'], timeout: 600_000, pod: 'p' });
      if (either?.type === 'pod.active') expectTypeOf(either).toEqualTypeOf<WaitedEvent<'pod.active'>>();
      // @ts-expect-error not an event type
      await waitForEvent('x', { type: 'pod.renewd', timeout: '1m' });
      // @ts-expect-error a timeout is ms or a duration
      await waitForEvent('x', { type: 'pod.renewed', timeout: new Date() });
    });
    const back = waitedEvent({ id: 'e', type: 'pod.renewed', signatureTimestamp: 1, receivedAt: 1_000, payload: { a: 1 } });
    expect(back).toEqual({ id: 'e', type: 'pod.renewed', signatureTimestamp: 1, receivedAt: new Date(1_000), payload: { a: 1 } });
    expect(waitedEvent(null)).toBeNull();
  });
});
