import { describe, expect, it } from 'vitest';
import { driftCheckFor, inferShapes, MAX_DRIFT_DIFFERENCES, MAX_DRIFT_PATH } from '../../../src/core/shapes/index.js';
import { fittingPayload, learnedShapes } from '../../fixtures/shapes/learned-samples.js';

describe('driftCheckFor', () => {
  const shapes = learnedShapes();
  const check = driftCheckFor(shapes);

  it('is built once per set of shapes', () => {
    expect(driftCheckFor(shapes)).toBe(check);
  });

  it('finds nothing in a payload that fits, nor for a type without a learned shape', () => {
    expect(check('pod.created', fittingPayload(1))).toBeNull();
    expect(check('pod.renewed', { anything: [1, 'x'] })).toBeNull();
  });

  it('names each difference by path, kind and a message, never a value from the body', () => {
    const payload = { ...fittingPayload(2), pod: { ...fittingPayload(2).pod, status: 'paused-secret-value', tier: 7 }, extra: null };
    const differences = check('pod.created', payload);
    expect(differences).toEqual([
      { path: '$.extra', place: '$', kind: 'new_field', message: 'new field: null' },
      { path: '$.pod.status', place: '$.pod.status', kind: 'new_value', message: 'new value: not one of the values recorded for it' },
      { path: '$.pod.tier', place: '$.pod.tier', kind: 'changed_type', message: 'changed type: now also integer (was string)' },
    ]);
    expect(JSON.stringify(differences)).not.toContain('paused-secret-value');
  });

  it('records at most MAX_DRIFT_DIFFERENCES, each path at most MAX_DRIFT_PATH long', () => {
    const many = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 1]));
    expect(check('pod.created', { ...fittingPayload(3), ...many })).toHaveLength(MAX_DRIFT_DIFFERENCES);
    const long = 'x'.repeat(500);
    const [d] = check('pod.created', { ...fittingPayload(4), [long]: 1 })!;
    expect(d!.path).toHaveLength(MAX_DRIFT_PATH);
    expect(d!.path.endsWith('…')).toBe(true);
  });

  it("places a difference in the learned shape's terms: a map's values as .*, a new field at the object that gained it", () => {
    const samples = Array.from({ length: 240 }, (_, i) => ({ eventType: 'pod.created', payload: { usage: { [`id-${i}`]: { cpu: i } }, pod: { id: `p${i}` } }, receivedAt: i }));
    const mapped = driftCheckFor(inferShapes(samples));
    expect(mapped('pod.created', { usage: { 'id-new': { cpu: 'high' } }, pod: { id: 'p', 'id-x': 1 } })).toEqual([
      { path: '$.pod["id-x"]', place: '$.pod', kind: 'new_field', message: 'new field: integer' },
      { path: '$.usage["id-new"].cpu', place: '$.usage.*.cpu', kind: 'changed_type', message: 'changed type: now also string (was integer)' },
    ]);
  });

  it('does not look below the depth the inference looks into', () => {
    const deep = (n: number): unknown => (n === 0 ? { leaf: 1 } : { next: deep(n - 1) });
    const samples = [0, 1].map((i) => ({ eventType: 'pod.created', payload: { d: deep(40) }, receivedAt: i }));
    const nested = driftCheckFor(inferShapes(samples));
    // A change 40 levels down is past MAX_DEPTH (32): the shape never saw there.
    const changed = { d: deep(40) } as { d: unknown };
    let at = changed.d as Record<string, unknown>;
    for (let i = 0; i < 40; i++) at = at.next as Record<string, unknown>;
    at.leaf = 'now a string';
    expect(nested('pod.created', changed)).toBeNull();
    expect(nested('pod.created', { d: { other: 1 } })).not.toBeNull();
  });
});
