import { describe, expect, it } from 'vitest';
import { fieldAt, findEventFields, findPayloadFields, inferShapes } from '../../../src/core/shapes/index.js';

const ID = ['0b6f7c2e-4a1d-4c8e-9f3a-2d5e6b7c8a90', '7d1e4f2a-9b3c-4e5d-8f6a-1b2c3d4e5f60'];
const AT = '2026-05-01T12:00:00Z';

/** The fields found over these payloads (all of one type). */
const fieldsOf = (...payloads: unknown[]) =>
  findEventFields(inferShapes(payloads.map((payload, i) => ({ eventType: 'pod.created', payload, receivedAt: i }))).types['pod.created']!.shape);

describe('findEventFields', () => {
  it('takes the first place that holds a uuid in every sample: pod.id, pod_id, data.pod.id, data.pod_id', () => {
    expect(fieldsOf({ pod: { id: ID[0] }, pod_id: ID[1] })).toEqual({ podId: ['pod', 'id'] });
    expect(fieldsOf({ pod: { id: 'not-a-uuid' }, pod_id: ID[1] })).toEqual({ podId: ['pod_id'] });
    expect(fieldsOf({ data: { pod: { id: ID[0] } } })).toEqual({ podId: ['data', 'pod', 'id'] });
    expect(fieldsOf({ data: { pod_id: ID[0] } })).toEqual({ podId: ['data', 'pod_id'] });
  });

  it('finds nothing where a sample lacks it, holds null, or holds no uuid', () => {
    expect(fieldsOf({ pod: { id: ID[0] } }, { pod: {} })).toEqual({});
    expect(fieldsOf({ pod: { id: ID[0] } }, { other: 1 })).toEqual({});
    expect(fieldsOf({ pod: { id: ID[0] } }, { pod: null })).toEqual({});
    expect(fieldsOf({ pod: { id: ID[0] } }, { pod: { id: null } })).toEqual({});
    expect(fieldsOf({ pod: { id: 42 } })).toEqual({});
  });

  it('takes the event time from the listed keys, top level first, then under data; never the pod’s created_at', () => {
    expect(fieldsOf({ pod: { created_at: AT }, created_at: AT })).toEqual({});
    expect(fieldsOf({ sent_at: AT, timestamp: AT, data: { occurred_at: AT } })).toEqual({ occurredAt: ['timestamp'] });
    expect(fieldsOf({ data: { occurredAt: AT, time: AT } })).toEqual({ occurredAt: ['data', 'occurredAt'] });
    expect(fieldsOf({ time: AT }, { time: 'yesterday' })).toEqual({});
    expect(fieldsOf({ occurred_at: AT, pod_id: ID[0] })).toEqual({ podId: ['pod_id'], occurredAt: ['occurred_at'] });
  });

  it('gives every type with samples an entry, in the published order', () => {
    const shapes = inferShapes([
      { eventType: 'pod.renewed', payload: { pod_id: ID[0] }, receivedAt: 0 },
      { eventType: 'pod.created', payload: {}, receivedAt: 0 },
    ]);
    expect(Object.entries(findPayloadFields(shapes))).toEqual([
      ['pod.created', {}],
      ['pod.renewed', { podId: ['pod_id'] }],
    ]);
  });
});

describe('fieldAt', () => {
  it('reads the value at a path, undefined where a step is missing or not an object', () => {
    const payload = JSON.parse(`{"pod":{"id":"${ID[0]}","tags":["a"]},"__proto__":{"id":1}}`) as unknown;
    expect(fieldAt(payload, ['pod', 'id'])).toBe(ID[0]);
    expect(fieldAt(payload, ['__proto__', 'id'])).toBe(1);
    expect(fieldAt(payload, ['pod', 'tags', '0'])).toBeUndefined();
    expect(fieldAt(payload, ['pod', 'name'])).toBeUndefined();
    expect(fieldAt(payload, ['pod', 'toString'])).toBeUndefined();
    expect(fieldAt(null, ['pod'])).toBeUndefined();
  });
});
