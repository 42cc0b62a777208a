import { describe, expect, it } from 'vitest';
import { createShapeInference, inferShapes, LOW_CARDINALITY, MAX_DEPTH, MAX_PROPERTIES, EVERY_VALUE, type PayloadSample } from '../../../src/core/shapes/index.js';

const T0 = Date.parse('2026-05-01T12:00:00Z');
const samples = (payloads: unknown[], eventType = 'pod.created'): PayloadSample[] => payloads.map((payload, i) => ({ eventType, payload, receivedAt: T0 + i * 1000 }));
const shapeOf = (payloads: unknown[], rule = LOW_CARDINALITY) => inferShapes(samples(payloads), rule).types['pod.created']!.shape;

describe('inferShapes', () => {
  it('marks a field required when every object had it, optional otherwise, nested objects alike', () => {
    expect(shapeOf([{ pod: { id: 'a', note: 'x' }, n: 1 }, { pod: { id: 'b' }, n: 2, extra: true }])).toEqual({
      types: ['object'],
      properties: {
        extra: { types: ['boolean'] },
        n: { types: ['integer'] },
        pod: { types: ['object'], properties: { id: { types: ['string'] }, note: { types: ['string'] } }, required: ['id'] },
      },
      required: ['n', 'pod'],
    });
  });

  it('counts presence per containing object: a field of an optional object is required when every such object had it', () => {
    const shape = shapeOf([{ a: { x: 1 } }, {}, { a: { x: 2 } }]);
    expect(shape.required).toEqual([]);
    expect(shape.properties!.a!.required).toEqual(['x']);
  });

  it('gives several JSON types a union, null makes nullable, an integer with a fraction a number', () => {
    const shape = shapeOf([{ v: 'a', n: 1, z: null }, { v: 2, n: 1.5, z: null }, { v: null, n: 3, z: null }]);
    expect(shape.properties).toEqual({ n: { types: ['number'] }, v: { types: ['string', 'integer', 'null'] }, z: { types: ['null'] } });
  });

  it('types integers beyond 2^53 as number (z.int() refuses them)', () => {
    expect(shapeOf([{ n: 2 ** 60 }]).properties!.n).toEqual({ types: ['number'] });
  });

  it('merges every item of every array; only empty arrays give no items', () => {
    const shape = shapeOf([{ a: [{ id: 1 }, { id: 2, x: 's' }], e: [] }, { a: [], e: [] }]);
    expect(shape.properties!.a).toEqual({ types: ['array'], items: { types: ['object'], properties: { id: { types: ['integer'] }, x: { types: ['string'] } }, required: ['id'] } });
    expect(shape.properties!.e).toEqual({ types: ['array'] });
  });

  it('marks strings that are always uuids or always RFC 3339 date-times, and only then', () => {
    const shape = shapeOf([
      { id: '6f1c2a57-3b8e-4d2a-9c1f-0e2d3c4b5a69', at: '2026-05-01T12:00:00Z', off: '2026-05-01T12:00:00.123+02:00', mixed: '6f1c2a57-3b8e-4d2a-9c1f-0e2d3c4b5a69', short: '2026-05-01T12:00Z' },
      { id: '00000000-0000-0000-0000-000000000000', at: '2026-05-02T00:00:00.5Z', off: '2026-05-01T12:00:00-05:00', mixed: 'not-a-uuid', short: '2026-05-01T12:00Z' },
    ]);
    expect(shape.properties).toMatchObject({
      id: { types: ['string'], format: 'uuid' },
      at: { types: ['string'], format: 'date-time' },
      off: { types: ['string'], format: 'date-time' },
    });
    expect(shape.properties!.mixed!.format).toBeUndefined();
    // RFC 3339 requires seconds.
    expect(shape.properties!.short!.format).toBeUndefined();
  });

  it('records the values of a low-cardinality string: at most 12 distinct over at least 20 strings', () => {
    const statuses = ['active', 'provisioning', 'active', 'destroyed'];
    const twenty = Array.from({ length: 20 }, (_, i) => ({ status: statuses[i % 4], name: `pod-${i}` }));
    const shape = shapeOf(twenty);
    expect(shape.properties!.status).toEqual({ types: ['string'], values: ['active', 'destroyed', 'provisioning'] });
    expect(shape.properties!.name).toEqual({ types: ['string'] });
    // 19 strings are too few to tell.
    expect(shapeOf(twenty.slice(1)).properties!.status).toEqual({ types: ['string'] });
    // 13 distinct values are too many.
    expect(shapeOf(Array.from({ length: 26 }, (_, i) => ({ s: `v${i % 13}` }))).properties!.s!.values).toBeUndefined();
    expect(shapeOf(Array.from({ length: 24 }, (_, i) => ({ s: `v${i % 12}` }))).properties!.s!.values).toHaveLength(12);
  });

  it('never records the values of uuids, date-times or long strings', () => {
    const id = '6f1c2a57-3b8e-4d2a-9c1f-0e2d3c4b5a69';
    const long = 'x'.repeat(65);
    const shape = shapeOf(Array.from({ length: 20 }, () => ({ id, at: '2026-05-01T12:00:00Z', long, ok: 'x'.repeat(64) })));
    expect(shape.properties!.id).toEqual({ types: ['string'], format: 'uuid' });
    expect(shape.properties!.at).toEqual({ types: ['string'], format: 'date-time' });
    expect(shape.properties!.long).toEqual({ types: ['string'] });
    expect(shape.properties!.ok!.values).toEqual(['x'.repeat(64)]);
  });

  it('records every value up to 32 with the rule --check uses, formats too', () => {
    const id = '6f1c2a57-3b8e-4d2a-9c1f-0e2d3c4b5a69';
    expect(shapeOf([{ s: 'a', id }], EVERY_VALUE).properties).toEqual({ id: { types: ['string'], format: 'uuid', values: [id] }, s: { types: ['string'], values: ['a'] } });
    expect(shapeOf(Array.from({ length: 32 }, (_, i) => ({ s: `v${i}` })), EVERY_VALUE).properties!.s!.values).toHaveLength(32);
    expect(shapeOf(Array.from({ length: 33 }, (_, i) => ({ s: `v${i}` })), EVERY_VALUE).properties!.s!.values).toBeUndefined();
  });

  it('counts the samples of each type and their first and last received time, whatever the order', () => {
    const inference = createShapeInference();
    inference.add({ eventType: 'pod.active', payload: {}, receivedAt: T0 + 5000 });
    inference.add({ eventType: 'pod.created', payload: {}, receivedAt: T0 });
    inference.add({ eventType: 'pod.active', payload: {}, receivedAt: T0 - 5000 });
    inference.add({ eventType: 'pod.active', payload: {}, receivedAt: T0 });
    const { types } = inference.shapes();
    // The 11 types in their published order.
    expect(Object.keys(types)).toEqual(['pod.created', 'pod.active']);
    expect(types['pod.active']).toMatchObject({ samples: 3, firstReceivedAt: '2026-05-01T11:59:55.000Z', lastReceivedAt: '2026-05-01T12:00:05.000Z' });
    expect(types['pod.active']!.shape).toEqual({ types: ['object'], properties: {}, required: [] });
  });

  it('turns an object with more than MAX_PROPERTIES distinct keys into a map of all their values', () => {
    const payloads = Array.from({ length: MAX_PROPERTIES + 1 }, (_, i) => ({ labels: { [`k${i}`]: i % 2 === 0 ? 'x' : null }, n: 1 }));
    const shape = shapeOf(payloads);
    expect(shape.properties!.labels).toEqual({ types: ['object'], map: { types: ['string', 'null'], values: ['x'] } });
    expect(shapeOf(payloads.slice(0, MAX_PROPERTIES)).properties!.labels!.properties).toBeDefined();
  });

  it('counts values deeper than MAX_DEPTH by type without looking into them', () => {
    let deep: unknown = { leaf: 1 };
    for (let i = 0; i < MAX_DEPTH + 5; i++) deep = { d: deep };
    let shape = shapeOf([deep]);
    let depth = 0;
    while (shape.properties?.d) {
      shape = shape.properties.d;
      depth++;
    }
    expect(depth).toBe(MAX_DEPTH);
    expect(shape).toEqual({ types: ['object'] });
  });

  it('keeps a "__proto__" key as a field', () => {
    const shape = shapeOf([JSON.parse('{"__proto__": {"x": 1}, "a": 1}')]);
    expect(Object.keys(shape.properties!)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(shape.properties)).toBe(Object.prototype);
    expect(shape.required).toEqual(['__proto__', 'a']);
  });

  it('gives the same shapes whatever the order of the samples', () => {
    const payloads = [{ a: 1, s: 'x', o: { k: [1, 'y'] } }, { a: 2.5, s: null }, { b: true, o: { k: [], j: {} } }, ...Array.from({ length: 30 }, (_, i) => ({ s: `v${i % 3}` }))];
    expect(shapeOf([...payloads].reverse())).toEqual(shapeOf(payloads));
  });
});
