import { describe, expect, it } from 'vitest';
import { defineHandler } from '../../../src/core/events/define-handler.js';
import { ConfigError } from '../../../src/core/errors.js';
import { eventOf } from '../../../src/core/events/event-of.js';
import { resolveOrderSpecs, toEpochMs } from '../../../src/core/order/order-spec.js';

const byPod = defineHandler('pod.*', { name: 'byPod', order: 'pod' }, async () => {});
const event = (type: string, payload: unknown, receivedAt = 1_000) =>
  eventOf({ eventId: 'e', eventType: type, signatureT: 1, receivedAt, body: new Uint8Array() }, payload, 1);

describe("order: 'pod'", () => {
  it('reads the pod id and event time where podhook schemas found them, per type', () => {
    const fields = Object.fromEntries(
      ['pod.created', 'pod.active', 'pod.destroyed', 'pod.destroy_failed', 'pod.action.queued', 'pod.status.changed', 'pod.renewed', 'pod.renewal_failed', 'pod.expiring', 'pod.backup.completed', 'pod.backup.failed'].map(
        (t) => [t, t === 'pod.active' ? { podId: ['data', 'pod_id'], occurredAt: ['data', 'at'] } : { podId: ['pod', 'id'], occurredAt: ['occurred_at'] }],
      ),
    );
    const spec = resolveOrderSpecs([byPod], { fields }).get('byPod')!;
    expect(spec.key(event('pod.created', { pod: { id: 'p-1' }, occurred_at: '2026-11-25T12:00:00Z' }))).toBe('p-1');
    expect(spec.at(event('pod.created', { pod: { id: 'p-1' }, occurred_at: '2026-11-25T12:00:00Z' }))).toBe(Date.UTC(2026, 10, 25, 12));
    expect(spec.key(event('pod.active', { data: { pod_id: 'p-2', at: '2026-11-25T12:00:01Z' } }))).toBe('p-2');
    // A payload without the field: not ordered; a time that is not one: the receipt time.
    expect(spec.key(event('pod.created', { pod: {} }))).toBeNull();
    expect(spec.at(event('pod.created', { pod: { id: 'p-1' }, occurred_at: 'soon' }, 42))).toBe(42);
  });

  it('takes the fields the project names once, over the learned ones; occurredAt null is the receipt time', () => {
    const spec = resolveOrderSpecs([byPod], { names: { podId: 'meta.pod', occurredAt: null } }).get('byPod')!;
    expect(spec.key(event('pod.renewed', { meta: { pod: 7 } }, 5))).toBe('7');
    expect(spec.at(event('pod.renewed', { meta: { pod: 7 } }, 5))).toBe(5);
  });

  it('stops the start with one line naming what to set when no fields are known', () => {
    const fail = () => resolveOrderSpecs([byPod], { fields: { 'pod.created': { podId: ['pod', 'id'] } } });
    expect(fail).toThrow(ConfigError);
    expect(fail).toThrow(/^handler byPod: order: 'pod' needs the pod id and event time fields of pod\.created, pod\.active.*export const orderFields = \{ podId: 'pod\.id', occurredAt: 'occurred_at' \}/);
    expect(() => fail()).not.toThrow(/\n/);
  });

  it('reads times as RFC 3339 strings, Dates or epoch milliseconds', () => {
    expect(toEpochMs('2026-11-25T12:00:00.000Z')).toBe(Date.UTC(2026, 10, 25, 12));
    expect(toEpochMs(new Date(5))).toBe(5);
    expect(toEpochMs(6)).toBe(6);
    for (const none of [undefined, null, '', 'not a time', Number.NaN, {}]) expect(toEpochMs(none)).toBeNull();
  });
});
