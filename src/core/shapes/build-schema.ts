import { z } from 'zod';
import type { JsonType, Shape } from './shape.js';

/**
 * The schema constructors a shape is built with. One walk (`buildSchema`) drives both zod's own
 * (`zodTarget`: the run-time schema) and their source text (`zodSourceTarget`: the generated
 * module), so the two cannot disagree.
 */
export interface SchemaTarget<S> {
  unknown(): S;
  null(): S;
  boolean(): S;
  int(): S;
  number(): S;
  string(): S;
  uuid(): S;
  dateTime(): S;
  array(items: S): S;
  /** An object with these keys (the optional ones wrapped by `optional`); other keys pass and are kept. */
  object(properties: ReadonlyArray<readonly [key: string, schema: S]>): S;
  /** An object whose keys are data: every value has this schema. */
  record(values: S): S;
  union(members: readonly [S, S, ...S[]]): S;
  nullable(schema: S): S;
  optional(schema: S): S;
}

/**
 * The schema a shape stands for: every value the shape was inferred from passes it. Loose
 * objects (a field the sender adds still passes), `z.int()` for integers, `z.uuid()` and
 * `z.iso.datetime({ offset: true })` for the formats; low-cardinality values are not enforced
 * (a new value must not fail parsing: `--check` and the drift check report it instead).
 */
export function buildSchema<S>(shape: Shape, target: SchemaTarget<S>): S {
  const members = shape.types.filter((type) => type !== 'null').map((type) => member(shape, type, target));
  const nullable = shape.types.includes('null');
  if (members.length === 0) return nullable ? target.null() : target.unknown();
  const schema = members.length === 1 ? members[0]! : target.union(members as [S, S, ...S[]]);
  return nullable ? target.nullable(schema) : schema;
}

/**
 * A key every object has through `Object.prototype` (`constructor`, `toString`, `__proto__`, …).
 * zod takes such a key as present when an object merely inherits it, so an optional one would
 * refuse every payload without it: it is left out of the schema (the key still passes, unchecked).
 */
export const isInheritedName = (key: string): boolean => key in Object.prototype;

function member<S>(shape: Shape, type: Exclude<JsonType, 'null'>, target: SchemaTarget<S>): S {
  switch (type) {
    case 'object': {
      if (shape.map !== undefined) return target.record(buildSchema(shape.map, target));
      const properties = shape.properties ?? {};
      const required = new Set(shape.required);
      return target.object(
        Object.keys(properties)
          .filter((key) => required.has(key) || !isInheritedName(key))
          .map((key) => {
            const schema = buildSchema(properties[key]!, target);
            return [key, required.has(key) ? schema : target.optional(schema)] as const;
          }),
      );
    }
    case 'array':
      return target.array(shape.items === undefined ? target.unknown() : buildSchema(shape.items, target));
    case 'string':
      return shape.format === 'uuid' ? target.uuid() : shape.format === 'date-time' ? target.dateTime() : target.string();
    case 'integer':
      return target.int();
    case 'number':
      return target.number();
    case 'boolean':
      return target.boolean();
  }
}

/** zod's constructors: `buildSchema(shape, zodTarget)` is the run-time schema of a shape. */
export const zodTarget: SchemaTarget<z.ZodType> = {
  unknown: () => z.unknown(),
  null: () => z.null(),
  boolean: () => z.boolean(),
  int: () => z.int(),
  number: () => z.number(),
  string: () => z.string(),
  uuid: () => z.uuid(),
  dateTime: () => z.iso.datetime({ offset: true }),
  array: (items) => z.array(items),
  object: (properties) => z.looseObject(Object.fromEntries(properties)),
  record: (values) => z.record(z.string(), values),
  union: (members) => z.union(members),
  nullable: (schema) => schema.nullable(),
  optional: (schema) => schema.optional(),
};

/** The run-time zod schema of a shape (the one the generated module spells out). */
export const shapeToZod = (shape: Shape): z.ZodType => buildSchema(shape, zodTarget);
