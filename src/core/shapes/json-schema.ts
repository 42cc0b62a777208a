import { EVENT_TYPES } from '../events/event-types.js';
import type { PayloadShapes, Shape } from './shape.js';

/** The JSON Schema dialect `podhook schemas --json` writes. */
export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** A JSON Schema (2020-12) as plain data. */
export type JsonSchema = { [keyword: string]: unknown };

/**
 * A shape as JSON Schema 2020-12: `type` (an array when several, `null` among them when
 * nullable; `integer` apart from `number`), `format` (`uuid`, `date-time`), `properties` with
 * `required` and `additionalProperties: true` (the sender may add fields), a map's values as
 * `additionalProperties`, `items`; a low-cardinality string's values as `examples` (they do not
 * restrict: a new value is drift to report, not an invalid payload).
 */
export function shapeToJsonSchema(shape: Shape): JsonSchema {
  const schema: JsonSchema = { type: shape.types.length === 1 ? shape.types[0] : [...shape.types] };
  if (shape.format !== undefined) schema.format = shape.format;
  if (shape.values !== undefined) schema.examples = [...shape.values];
  if (shape.types.includes('object')) {
    if (shape.map !== undefined) {
      schema.additionalProperties = shapeToJsonSchema(shape.map);
    } else {
      const properties = shape.properties;
      if (properties !== undefined) schema.properties = Object.fromEntries(Object.keys(properties).map((key) => [key, shapeToJsonSchema(properties[key]!)]));
      if (shape.required !== undefined && shape.required.length > 0) schema.required = [...shape.required];
      schema.additionalProperties = true;
    }
  }
  if (shape.items !== undefined) schema.items = shapeToJsonSchema(shape.items);
  return schema;
}

/**
 * One JSON Schema document with a definition per event type under `$defs` (keyed by the type,
 * `#/$defs/pod.created`); a type without samples is any JSON object.
 */
export function shapesToJsonSchema(shapes: PayloadShapes, types: readonly string[] = EVENT_TYPES): JsonSchema {
  const total = types.reduce((sum, type) => sum + (Object.hasOwn(shapes.types, type) ? shapes.types[type]!.samples : 0), 0);
  const defs = types.map((type): [string, JsonSchema] => {
    if (!Object.hasOwn(shapes.types, type)) return [type, { description: `${type}: no sample: any JSON object`, type: 'object', additionalProperties: true }];
    const t = shapes.types[type]!;
    return [type, { description: `${type}: inferred from ${t.samples} ${t.samples === 1 ? 'sample' : 'samples'} received from ${t.firstReceivedAt} to ${t.lastReceivedAt}`, ...shapeToJsonSchema(t.shape) }];
  });
  return {
    $schema: JSON_SCHEMA_DIALECT,
    title: 'podhook payload shapes',
    description: `The payload of each event type as \`podhook schemas\` inferred it from ${total} ${total === 1 ? 'payload' : 'payloads'}; one definition per type in $defs.`,
    $defs: Object.fromEntries(defs),
  };
}
