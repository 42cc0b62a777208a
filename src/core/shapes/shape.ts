import { z } from 'zod';

/**
 * The JSON types a value can have, in the order shapes list them (and unions are written):
 * `integer` is a number without a fraction; a shape never holds both `integer` and `number`.
 */
export const JSON_TYPES = ['object', 'array', 'string', 'integer', 'number', 'boolean', 'null'] as const;

export type JsonType = (typeof JSON_TYPES)[number];

/** A string format a shape notes when every string seen at that place had it. */
export type StringFormat = 'uuid' | 'date-time';

/**
 * What the values seen at one place of a payload had in common: the inferred shape, in a
 * JSON-able form (the generated module embeds it as `PAYLOAD_SHAPES`; `--check` reads it back).
 * Keys appear in this order, object keys sorted, so the same samples give the same text.
 */
export interface Shape {
  /** The JSON types seen, in `JSON_TYPES` order. `null` among them: nullable. */
  types: readonly JsonType[];
  /** Every string seen here was a uuid / an RFC 3339 date-time. */
  format?: StringFormat;
  /** A low-cardinality string: every value seen, sorted (see `LowCardinalityRule`). */
  values?: readonly string[];
  /**
   * Objects: every key seen and the shape of its values. Absent when the objects were not looked
   * into (deeper than `MAX_DEPTH`) or are a map (`map`); `{}` when every object was empty.
   */
  properties?: Record<string, Shape>;
  /** Objects: the keys every object had, sorted; the other keys of `properties` are optional. */
  required?: readonly string[];
  /** Objects with more distinct keys than `MAX_PROPERTIES` (keyed by ids, say): the shape of every value. */
  map?: Shape;
  /** Arrays: the shape of every item of every array; absent when every array was empty. */
  items?: Shape;
}

/** A shape's types in a few words: `string (uuid) | null`. */
export function describeShape(shape: Shape): string {
  return shape.types.map((type) => (type === 'string' && shape.format !== undefined ? `string (${shape.format})` : type)).join(' | ');
}

/** The tag of the `PAYLOAD_SHAPES` document: a reader refuses a version it does not know. */
export const PAYLOAD_SHAPES_FORMAT = 'podhook.shapes.v1';

/** One event type's inferred shape and the samples it was learned from. */
export interface TypeShape {
  /** How many payloads were merged. */
  samples: number;
  /** When the first and the last of them was received (ISO 8601, UTC). */
  firstReceivedAt: string;
  lastReceivedAt: string;
  /** The payload's shape (an object's, for every sample is a JSON object). */
  shape: Shape;
}

/** The shapes of the event types that had samples: what the generated module embeds as `PAYLOAD_SHAPES`. */
export interface PayloadShapes {
  format: typeof PAYLOAD_SHAPES_FORMAT;
  /** By event type; a type without a sample is absent. */
  types: Record<string, TypeShape>;
}

const ShapeSchema: z.ZodType<Shape> = z.strictObject({
  types: z.array(z.enum(JSON_TYPES)).min(1),
  format: z.enum(['uuid', 'date-time']).optional(),
  values: z.array(z.string()).optional(),
  get properties() {
    return z.record(z.string(), ShapeSchema).optional();
  },
  required: z.array(z.string()).optional(),
  get map() {
    return ShapeSchema.optional();
  },
  get items() {
    return ShapeSchema.optional();
  },
});

/** Checks a `PAYLOAD_SHAPES` document read back from a file (`--check`). */
export const PayloadShapesSchema = z.strictObject({
  format: z.literal(PAYLOAD_SHAPES_FORMAT, {
    error: (issue) => `unsupported format ${JSON.stringify(issue.input)} (this podhook reads ${PAYLOAD_SHAPES_FORMAT})`,
  }),
  types: z.record(
    z.string(),
    z.strictObject({ samples: z.int().positive(), firstReceivedAt: z.iso.datetime(), lastReceivedAt: z.iso.datetime(), shape: ShapeSchema }),
  ),
});
