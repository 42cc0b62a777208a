import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { validateSubset } from '../../helpers/json-schema-subset.js';
import {
  checkShapes,
  compileFit,
  EVERY_VALUE,
  generatePayloadModule,
  inferShapes,
  samplePayload,
  shapeToJsonSchema,
  shapeToZod,
  shapeToZodSource,
  type PayloadSample,
  type Shape,
} from '../../../src/core/shapes/index.js';

// Keys a payload plausibly has, and some that trip naive code (a prototype's names, quoting).
const key = fc.oneof(fc.constantFrom('id', 'status', 'pod', 'at', 'n', 'items', '__proto__', 'constructor', 'a-b', ''), fc.string({ maxLength: 3 }));
const text = fc.oneof(
  fc.constantFrom('active', 'provisioning', 'paused'),
  fc.uuid(),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(4_102_444_800_000) }).map((d) => d.toISOString().replace('Z', '+02:00')),
  fc.string({ maxLength: 8 }),
);
const leaf = fc.oneof(text, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(2 ** 60), fc.boolean(), fc.constant(null));
const { value } = fc.letrec<{ value: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(key, tie('value'), { maxKeys: 5 }),
}));
// What JSON.parse gives for a body: the only objects the inference ever sees.
const payload = fc.dictionary(key, value, { maxKeys: 6 }).map((o) => JSON.parse(JSON.stringify(o)) as Record<string, unknown>);
const payloads = fc.array(payload, { minLength: 1, maxLength: 8 });

const T0 = Date.parse('2026-05-01T00:00:00Z');
const asSamples = (list: readonly unknown[]): PayloadSample[] => list.map((p, i) => ({ eventType: 'pod.created', payload: p, receivedAt: T0 + i }));
const shapeOf = (list: readonly unknown[], rule?: typeof EVERY_VALUE) => inferShapes(asSamples(list), rule).types['pod.created']!.shape;
const fromSource = (source: string): z.ZodType => new Function('z', `return ${source};`)(z);

/**
 * Removes a field the shape says is required from `value` (an object of that shape), descending
 * into required object fields as `choices` say; returns the JSONPath of the removed field.
 */
function removeRequired(shape: Shape, value: Record<string, unknown>, path: string, choices: readonly number[]): string | undefined {
  const required = shape.required ?? [];
  if (required.length === 0) return undefined;
  const [pick = 0, ...rest] = choices;
  const field = required[pick % required.length]!;
  const at = /^[A-Za-z_$][\w$]*$/.test(field) ? `${path}.${field}` : `${path}[${JSON.stringify(field)}]`;
  const child = value[field];
  const fieldShape = shape.properties![field]!;
  if (pick % 2 === 1 && fieldShape.types.length === 1 && fieldShape.types[0] === 'object' && typeof child === 'object' && child !== null && !Array.isArray(child)) {
    const deeper = removeRequired(fieldShape, child as Record<string, unknown>, at, rest);
    if (deeper !== undefined) return deeper;
  }
  delete value[field];
  return at;
}

describe('inferred shapes (property)', () => {
  it('every sample passes the schema built from the shape inferred from the set', () => {
    fc.assert(
      fc.property(payloads, (list) => {
        const schema = shapeToZod(shapeOf(list));
        for (const p of list) expect(schema.safeParse(p).error).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('every sample validates against the JSON Schema of the shape', () => {
    fc.assert(
      fc.property(payloads, (list) => {
        const schema = shapeToJsonSchema(shapeOf(list));
        for (const p of list) expect(validateSubset(schema, p)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('the generated source text is the same schema as the one built at run time', () => {
    fc.assert(
      fc.property(payloads, (list) => {
        const shape = shapeOf(list);
        const runtime = shapeToZod(shape);
        const generated = fromSource(shapeToZodSource(shape));
        expect(z.toJSONSchema(generated)).toEqual(z.toJSONSchema(runtime));
        for (const p of list) expect(generated.safeParse(p).error).toBeUndefined();
      }),
      { numRuns: 200 },
    );
  });

  it('removing a required field from one sample makes the check report that field gone', () => {
    fc.assert(
      fc.property(payloads, fc.nat(), fc.array(fc.nat(), { maxLength: 6 }), (list, which, choices) => {
        const committed = inferShapes(asSamples(list));
        const shape = committed.types['pod.created']!.shape;
        const changed = list.map((p) => JSON.parse(JSON.stringify(p)) as Record<string, unknown>);
        const path = removeRequired(shape, changed[which % changed.length]!, '$', choices);
        fc.pre(path !== undefined);
        const differences = checkShapes(committed, inferShapes(asSamples(changed), EVERY_VALUE));
        expect(differences).toContainEqual(expect.objectContaining({ eventType: 'pod.created', kind: 'field_gone', path }));
      }),
      { numRuns: 300 },
    );
  });

  it('any subset of the samples fits the shapes of the whole set: the check finds nothing', () => {
    fc.assert(
      fc.property(payloads.chain((list) => fc.tuple(fc.constant(list), fc.subarray(list, { minLength: 1 }))), ([list, subset]) => {
        expect(checkShapes(inferShapes(asSamples(list)), inferShapes(asSamples(subset), EVERY_VALUE))).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('the generated module is the same text, byte for byte, whatever the order of the samples', () => {
    fc.assert(
      fc.property(payloads.chain((list) => fc.tuple(fc.constant(list), fc.shuffledSubarray(list, { minLength: list.length, maxLength: list.length }))), ([list, shuffled]) => {
        // Same receivedAt per payload in both orders: the header's times must not depend on the order either.
        const timed = list.map((p, i) => ({ eventType: 'pod.created', payload: p, receivedAt: T0 + i * 1000 }));
        const reordered = shuffled.map((p) => timed.find((s) => s.payload === p)!);
        expect(generatePayloadModule(inferShapes(reordered))).toBe(generatePayloadModule(inferShapes(timed)));
      }),
      { numRuns: 100 },
    );
  });
});

/** Every place of a JSON value that holds a leaf, as a setter. */
function leafSetters(value: unknown, set: (v: unknown) => void, out: Array<(v: unknown) => void> = []): Array<(v: unknown) => void> {
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) leafSetters(v, (n) => ((value as Record<string, unknown>)[k] = n), out);
  } else out.push(set);
  return out;
}

describe('compileFit (property)', () => {
  it('a payload fits exactly when checkShapes finds no difference for it, whatever the committed set', () => {
    // Committed shapes as a generated module records them (values kept from one sample on, so short
    // sets record values too); probes: other payloads, and committed ones with a few leaves changed.
    const rule = { maxValues: 12, minOccurrences: 1, withFormats: false };
    const edits = fc.array(fc.tuple(fc.nat(), fc.nat(), fc.oneof(text, leaf)), { maxLength: 3 });
    fc.assert(
      fc.property(payloads, payloads, edits, (committed, others, changes) => {
        const shapes = inferShapes(asSamples(committed), rule);
        const fits = compileFit(shapes.types['pod.created']!.shape);
        const edited = changes.map(([which, where, to]) => {
          const copy = structuredClone(committed[which % committed.length]!);
          const setters = leafSetters(copy, () => {});
          if (setters.length > 0) setters[where % setters.length]!(to);
          return copy;
        });
        for (const p of [...committed, ...others, ...edited]) {
          const differences = checkShapes(shapes, inferShapes(asSamples([p]), EVERY_VALUE));
          expect(fits(p), JSON.stringify({ p, differences })).toBe(differences.length === 0);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('samplePayload (property)', () => {
  it('makes a payload that fits the shape it is made from (no drift), that its schema parses, the same for the same seed', () => {
    fc.assert(
      fc.property(payloads, fc.integer(), (list, seed) => {
        const shape = inferShapes(asSamples(list), { maxValues: 12, minOccurrences: 1, withFormats: false }).types['pod.created']!.shape;
        const sample = samplePayload(shape, { now: T0, seed });
        expect(compileFit(shape)(JSON.parse(JSON.stringify(sample)))).toBe(true);
        expect(shapeToZod(shape).safeParse(sample).error).toBeUndefined();
        expect(samplePayload(shape, { now: T0, seed })).toEqual(sample);
      }),
      { numRuns: 300 },
    );
  });
});
