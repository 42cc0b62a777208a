import { describe, expect, it } from 'vitest';
import { checkShapes, EVERY_VALUE, formatDifference, inferShapes, MAX_PROPERTIES, type PayloadSample } from '../../../src/core/shapes/index.js';

const T0 = Date.parse('2026-05-01T12:00:00Z');
const ID = '6f1c2a57-3b8e-4d2a-9c1f-0e2d3c4b5a69';
const base = (i: number) => ({
  pod: { id: ID, status: i % 2 === 0 ? 'active' : 'provisioning', tier: 'starter', size: 4 },
  at: '2026-05-01T12:00:00Z',
  note: 'n',
  tags: ['a'],
});
/** 24 samples: enough for `status` to be low-cardinality. */
const committed = inferShapes(Array.from({ length: 24 }, (_, i): PayloadSample => ({ eventType: 'pod.created', payload: base(i), receivedAt: T0 + i })));

/** The check's lines for new samples: `base` payloads with `change` applied to the first. */
function linesFor(change: (payload: ReturnType<typeof base> & Record<string, unknown>) => void, { count = 3, eventType = 'pod.created' } = {}): string[] {
  const payloads = Array.from({ length: count }, (_, i) => base(i) as ReturnType<typeof base> & Record<string, unknown>);
  change(payloads[0]!);
  const observed = inferShapes(
    payloads.map((payload, i) => ({ eventType, payload, receivedAt: T0 + i })),
    EVERY_VALUE,
  );
  return checkShapes(committed, observed).map(formatDifference);
}

describe('checkShapes', () => {
  it('finds nothing when the samples fit', () => {
    expect(linesFor(() => {})).toEqual([]);
  });

  it('reports a new field, with its type', () => {
    expect(linesFor((p) => void ((p.pod as Record<string, unknown>).region = 'eu-1'))).toEqual(['pod.created $.pod.region: new field: string']);
    expect(linesFor((p) => void (p['content-type'] = { a: 1 }))).toEqual(['pod.created $["content-type"]: new field: object']);
  });

  it('reports a required field missing from some samples, or from every one', () => {
    expect(linesFor((p) => void delete (p.pod as Partial<typeof p.pod>).tier)).toEqual(['pod.created $.pod.tier: field gone: was required, missing from some samples']);
    expect(linesFor((p) => void delete (p as Partial<typeof p>).note, { count: 1 })).toEqual(['pod.created $.note: field gone: was required, missing from every sample']);
  });

  it('reports a changed type: a new JSON type, integer to number, a lost format, nullable now', () => {
    expect(linesFor((p) => void ((p.pod as Record<string, unknown>).size = 4.5))).toEqual(['pod.created $.pod.size: changed type: integer → number (a value with a fraction)']);
    expect(linesFor((p) => void ((p as Record<string, unknown>).note = 3))).toEqual(['pod.created $.note: changed type: now also integer (was string)']);
    expect(linesFor((p) => void ((p.pod as Record<string, unknown>).id = 'pod-1'))).toEqual(['pod.created $.pod.id: changed type: not always a uuid now']);
    expect(linesFor((p) => void ((p as Record<string, unknown>).at = '2026-05-01'))).toEqual(['pod.created $.at: changed type: not always a date-time now']);
    expect(linesFor((p) => void ((p as Record<string, unknown>).note = null))).toEqual(['pod.created $.note: changed type: now nullable (was string)']);
    expect(linesFor((p) => void (p.tags = [1 as unknown as string]))).toEqual(['pod.created $.tags[*]: changed type: now also integer (was string)']);
  });

  it('reports each new value of a low-cardinality string, however rare, and more values than it tracks', () => {
    expect(linesFor((p) => void (p.pod.status = 'paused'))).toEqual(['pod.created $.pod.status: new value "paused" (seen: "active", "provisioning")']);
    const forty = Array.from({ length: 40 }, (_, i) => ({ eventType: 'pod.created', payload: { ...base(0), pod: { ...base(0).pod, status: `s${i}` } }, receivedAt: T0 }));
    expect(checkShapes(committed, inferShapes(forty, EVERY_VALUE)).map(formatDifference)).toEqual(['pod.created $.pod.status: new values: more than 32 distinct or longer than 64 characters (seen: "active", "provisioning")']);
  });

  it('reports no difference for what still fits: fewer types, an optional field not seen, integers where numbers were', () => {
    const loose = inferShapes([
      { eventType: 'pod.active', payload: { n: 1.5, s: 'x', o: 1 }, receivedAt: T0 },
      { eventType: 'pod.active', payload: { n: 1, s: null }, receivedAt: T0 },
    ]);
    expect(checkShapes(loose, inferShapes([{ eventType: 'pod.active', payload: { n: 2, s: 'y' }, receivedAt: T0 }], EVERY_VALUE))).toEqual([]);
  });

  it('reports a type the file has no shape for once, and leaves a committed type without samples alone', () => {
    expect(linesFor(() => {}, { eventType: 'pod.renewed', count: 2 })).toEqual(['pod.renewed $: new type: 2 samples, and no shape for it in the file']);
  });

  it('reports an object that became a map, and compares the values of a committed map', () => {
    const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 1]));
    const small = inferShapes([{ eventType: 'pod.active', payload: { labels: wide(3) }, receivedAt: T0 }]);
    const big = inferShapes([{ eventType: 'pod.active', payload: { labels: wide(MAX_PROPERTIES + 1) }, receivedAt: T0 }], EVERY_VALUE);
    expect(checkShapes(small, big).map(formatDifference)).toEqual([`pod.active $.labels: changed type: now a map (more than ${MAX_PROPERTIES} distinct keys)`]);
    const mapped = inferShapes([{ eventType: 'pod.active', payload: { labels: wide(MAX_PROPERTIES + 1) }, receivedAt: T0 }]);
    const stringy = inferShapes([{ eventType: 'pod.active', payload: { labels: { k1: 'x' } }, receivedAt: T0 }], EVERY_VALUE);
    expect(checkShapes(mapped, stringy).map(formatDifference)).toEqual(['pod.active $.labels.k1: changed type: now also string (was integer)']);
  });

  it('reports items in arrays that were always empty', () => {
    const empty = inferShapes([{ eventType: 'pod.active', payload: { a: [] }, receivedAt: T0 }]);
    const full = inferShapes([{ eventType: 'pod.active', payload: { a: [{ id: 1 }] }, receivedAt: T0 }], EVERY_VALUE);
    expect(checkShapes(empty, full).map(formatDifference)).toEqual(['pod.active $.a[*]: changed type: arrays have items now (were always empty): object']);
  });

  it('does not take a key that objects inherit for a committed field', () => {
    const plain = inferShapes([{ eventType: 'pod.active', payload: { a: 1 }, receivedAt: T0 }]);
    const odd = inferShapes([{ eventType: 'pod.active', payload: { a: 1, constructor: 'x' }, receivedAt: T0 }], EVERY_VALUE);
    expect(checkShapes(plain, odd).map(formatDifference)).toEqual(['pod.active $.constructor: new field: string']);
  });
});
