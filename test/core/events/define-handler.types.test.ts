// Type tests: checked by `tsc --noEmit` (part of `npm test`); the `it` blocks keep vitest honest.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineHandler, EVENT_SCHEMAS, type EventPayload, type LearnedPayload, type MatchingTypes, type PodEvent } from '../../../src/index.js';

describe('defineHandler types', () => {
  it('narrows the event to the pattern', () => {
    const h = defineHandler('pod.backup.failed', async (event) => {
      expectTypeOf(event.type).toEqualTypeOf<'pod.backup.failed'>();
      // The type handlers/_payloads.ts learned for it (any JSON object while it has no sample of it).
      expectTypeOf(event.payload).toEqualTypeOf<EventPayload<'pod.backup.failed'>>();
      expectTypeOf(event.payload).toEqualTypeOf<LearnedPayload<'pod.backup.failed'>>();
      expectTypeOf(event.rawBody).toEqualTypeOf<Uint8Array>();
      expectTypeOf(event.attempt).toBeNumber();
    });
    expect(h.pattern).toBe('pod.backup.failed');
  });

  it('gives a wildcard the union of what it matches, narrowed by event.type', () => {
    expectTypeOf<MatchingTypes<'pod.backup.*'>>().toEqualTypeOf<'pod.backup.completed' | 'pod.backup.failed'>();
    expectTypeOf<MatchingTypes<'pod.*'>>().toEqualTypeOf<import('../../../src/index.js').EventType>();
    defineHandler('pod.backup.*', { name: 'backups' }, (event) => {
      expectTypeOf(event.type).toEqualTypeOf<'pod.backup.completed' | 'pod.backup.failed'>();
    });
  });

  it('types the payload from a stricter schema', () => {
    const schema = EVENT_SCHEMAS['pod.expiring'].extend({ expires_at: z.string() });
    defineHandler('pod.expiring', { schema }, (event) => {
      expectTypeOf(event.payload.expires_at).toBeString();
    });
  });

  it('refuses a pod.backup.failed handler registered for pod.created, and unknown patterns', () => {
    const onBackupFailed = async (_event: PodEvent<'pod.backup.failed'>) => {};
    // @ts-expect-error: a pod.backup.failed handler cannot handle pod.created
    defineHandler('pod.created', onBackupFailed);
    defineHandler('pod.backup.failed', onBackupFailed);
    // @ts-expect-error: not an event type or wildcard
    defineHandler('pod.teleported', async () => {});
    // @ts-expect-error: a wildcard must end a known prefix
    defineHandler('pods.*', async () => {});
    expect(true).toBe(true);
  });
});

describe('defineHandler types: ordered handlers', () => {
  it('gives an ordered handler its order in the context, typed; an unordered one may not read it as set', () => {
    defineHandler(
      'pod.*',
      {
        name: 'syncPod',
        order: {
          key: (event) => {
            expectTypeOf(event.type).toEqualTypeOf<import('../../../src/index.js').EventType>();
            return (event.payload.pod as { id?: string } | undefined)?.id;
          },
          at: (event) => event.payload.occurred_at as string,
          stale: 'skip',
        },
      },
      async (_event, { order }) => {
        expectTypeOf(order.stale).toBeBoolean();
        expectTypeOf(order.key).toEqualTypeOf<string | null>();
        expectTypeOf(order.at).toEqualTypeOf<Date>();
        expectTypeOf(order.newest).toEqualTypeOf<{ eventId: string; at: Date } | undefined>();
      },
    );
    defineHandler('pod.created', { name: 'byPod', order: 'pod' }, async (_event, { order }) => {
      expectTypeOf(order.stale).toBeBoolean();
    });
    defineHandler('pod.created', { name: 'plain' }, async (_event, ctx) => {
      // @ts-expect-error: an unordered handler's context has no order set
      void ctx.order.stale;
    });
    // @ts-expect-error: stale is 'run' or 'skip' (and defineHandler throws at run time too)
    expect(() => defineHandler('pod.created', { order: { key: () => 'k', stale: 'later' } }, async () => {})).toThrow(/stale must be/);
    expect(() => defineHandler('pod.created', { order: { key: 'pod.id' } as never }, async () => {})).toThrow(/order must be 'pod' or/);
  });
});
