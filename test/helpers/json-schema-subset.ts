import { isDateTime, isUuid, type JsonSchema } from '../../src/core/shapes/index.js';

const TYPE_NAMES = ['object', 'array', 'string', 'integer', 'number', 'boolean', 'null'];
const KEYWORDS = ['$schema', 'title', 'description', '$defs', 'type', 'format', 'examples', 'properties', 'required', 'additionalProperties', 'items'];

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/**
 * The problems of one value against a JSON Schema (2020-12) using only the keywords `podhook schemas
 * --json` writes: `type`, `format` (uuid, date-time), `properties`, `required`, `additionalProperties`,
 * `items`. Enough to check that samples validate; not a general validator.
 */
export function validateSubset(schema: JsonSchema, value: unknown, path = '$'): string[] {
  const types = [schema.type].flat() as string[];
  const type = jsonType(value);
  if (!types.includes(type) && !(type === 'integer' && types.includes('number'))) return [`${path}: ${type} is not ${types.join(' | ')}`];
  const problems: string[] = [];
  if (type === 'string' && schema.format === 'uuid' && !isUuid(value as string)) problems.push(`${path}: not a uuid`);
  if (type === 'string' && schema.format === 'date-time' && !isDateTime(value as string)) problems.push(`${path}: not a date-time`);
  if (type === 'object') {
    const object = value as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    for (const key of (schema.required ?? []) as string[]) if (!Object.hasOwn(object, key)) problems.push(`${path}.${key}: required`);
    for (const key of Object.keys(object)) {
      const sub = Object.hasOwn(properties, key) ? properties[key]! : schema.additionalProperties;
      if (sub === false) problems.push(`${path}.${key}: not allowed`);
      else if (typeof sub === 'object' && sub !== null) problems.push(...validateSubset(sub as JsonSchema, object[key], `${path}.${key}`));
    }
  }
  if (type === 'array' && schema.items !== undefined) (value as unknown[]).forEach((item, i) => problems.push(...validateSubset(schema.items as JsonSchema, item, `${path}[${i}]`)));
  return problems;
}

/** What is wrong with a schema's own structure: unknown keywords or type names, `required` keys that are not properties. */
export function schemaProblems(schema: JsonSchema, path = '#'): string[] {
  const problems = Object.keys(schema).filter((k) => !KEYWORDS.includes(k)).map((k) => `${path}: unknown keyword ${k}`);
  if (schema.type !== undefined) {
    const types = [schema.type].flat();
    if (types.length === 0 || types.some((t) => !TYPE_NAMES.includes(t as string)) || new Set(types).size !== types.length) problems.push(`${path}/type: ${JSON.stringify(schema.type)}`);
  }
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  for (const key of (schema.required ?? []) as string[]) if (!Object.hasOwn(properties, key)) problems.push(`${path}/required: ${key} is not a property`);
  for (const [key, sub] of Object.entries(properties)) problems.push(...schemaProblems(sub, `${path}/properties/${key}`));
  for (const [key, sub] of Object.entries((schema.$defs ?? {}) as Record<string, JsonSchema>)) problems.push(...schemaProblems(sub, `${path}/$defs/${key}`));
  if (typeof schema.additionalProperties === 'object') problems.push(...schemaProblems(schema.additionalProperties as JsonSchema, `${path}/additionalProperties`));
  if (schema.items !== undefined) problems.push(...schemaProblems(schema.items as JsonSchema, `${path}/items`));
  return problems;
}
