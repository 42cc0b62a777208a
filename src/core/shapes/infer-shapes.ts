import { EVENT_TYPES } from '../events/event-types.js';
import { LOW_CARDINALITY, type LowCardinalityRule } from './low-cardinality.js';
import { PAYLOAD_SHAPES_FORMAT, type PayloadShapes, type TypeShape } from './shape.js';
import { mergeValue, newNode, nodeShape, type ShapeNode } from './_shape-node.js';

/** One payload to learn from. */
export interface PayloadSample {
  eventType: string;
  /** The parsed body. */
  payload: unknown;
  /** When it was received, in ms since the epoch. */
  receivedAt: number;
}

/**
 * Merges payloads one at a time into one shape per event type. Memory depends on the payloads'
 * structure, never on how many were merged: counts and flags per place, at most `TRACKED_VALUES`
 * distinct strings per place, at most `MAX_PROPERTIES` keys per object place (more make it a map),
 * nothing looked into below `MAX_DEPTH`.
 */
export interface ShapeInference {
  /** Merges one sample into its type's shape. */
  add(sample: PayloadSample): void;
  /** The shapes so far, the same whatever order the samples came in. */
  shapes(rule?: LowCardinalityRule): PayloadShapes;
}

interface TypeNode {
  samples: number;
  first: number;
  last: number;
  root: ShapeNode;
}

const iso = (ms: number) => new Date(ms).toISOString();

const ORDER = new Map<string, number>(EVENT_TYPES.map((type, i) => [type, i]));
/** The 11 types in their published order, then any other in code-unit order. */
const byType = (a: string, b: string) => (ORDER.get(a) ?? Infinity) - (ORDER.get(b) ?? Infinity) || (a < b ? -1 : a > b ? 1 : 0);

/**
 * A streaming inference: a field present in every sample (of the object that holds it) is
 * required, others optional; several JSON types make a union, `null` makes it nullable; nested
 * objects and array items merge the same way; strings always a uuid or an RFC 3339 date-time are
 * marked so; integers apart from numbers; low-cardinality strings keep their values (`rule`).
 *
 * @example
 * const inference = createShapeInference();
 * for (const d of deliveries) inference.add({ eventType: d.eventType, payload, receivedAt: d.receivedAt });
 * const shapes = inference.shapes();
 */
export function createShapeInference(): ShapeInference {
  const types = new Map<string, TypeNode>();
  return {
    add({ eventType, payload, receivedAt }) {
      let type = types.get(eventType);
      if (type === undefined) {
        type = { samples: 0, first: receivedAt, last: receivedAt, root: newNode() };
        types.set(eventType, type);
      }
      type.samples++;
      type.first = Math.min(type.first, receivedAt);
      type.last = Math.max(type.last, receivedAt);
      mergeValue(type.root, payload, 0);
    },
    shapes(rule = LOW_CARDINALITY) {
      const shapes = [...types.keys()].sort(byType).map((name): [string, TypeShape] => {
        const type = types.get(name)!;
        const shape = nodeShape(type.root, rule);
        return [name, { samples: type.samples, firstReceivedAt: iso(type.first), lastReceivedAt: iso(type.last), shape }];
      });
      return { format: PAYLOAD_SHAPES_FORMAT, types: Object.fromEntries(shapes) };
    },
  };
}

/** The shapes of a set of samples at once (see `createShapeInference`). */
export function inferShapes(samples: Iterable<PayloadSample>, rule: LowCardinalityRule = LOW_CARDINALITY): PayloadShapes {
  const inference = createShapeInference();
  for (const sample of samples) inference.add(sample);
  return inference.shapes(rule);
}
