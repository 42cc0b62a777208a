import { buildSchema, type SchemaTarget } from './build-schema.js';
import type { Shape } from './shape.js';
import { indent, propertyKey } from './_source-text.js';

/** zod's constructors as source text, formatted as the generated module writes them (`z` is zod). */
export const zodSourceTarget: SchemaTarget<string> = {
  unknown: () => 'z.unknown()',
  null: () => 'z.null()',
  boolean: () => 'z.boolean()',
  int: () => 'z.int()',
  number: () => 'z.number()',
  string: () => 'z.string()',
  uuid: () => 'z.uuid()',
  dateTime: () => 'z.iso.datetime({ offset: true })',
  array: (items) => `z.array(${items})`,
  object: (properties) =>
    properties.length === 0 ? 'z.looseObject({})' : `z.looseObject({\n${properties.map(([key, schema]) => `  ${propertyKey(key)}: ${indent(schema)},\n`).join('')}})`,
  record: (values) => `z.record(z.string(), ${values})`,
  union: (members) => `z.union([${members.join(', ')}])`,
  nullable: (schema) => `${schema}.nullable()`,
  optional: (schema) => `${schema}.optional()`,
};

/** The zod schema of a shape as TypeScript source: the same schema `shapeToZod` builds. */
export const shapeToZodSource = (shape: Shape): string => buildSchema(shape, zodSourceTarget);
