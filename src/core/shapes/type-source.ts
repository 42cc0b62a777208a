import { isInheritedName } from './build-schema.js';
import { describeShape, type JsonType, type Shape } from './shape.js';
import { indent, propertyKey } from './_source-text.js';

/**
 * The TypeScript type of a shape, as source text. Objects are closed (no index signature), so
 * reading a field no sample had is a type error; the zod schema still lets unknown keys through
 * at run time. Each field of a string or integer is documented with what the shape knows of it:
 * `integer`, `uuid`, `date-time`, the values seen.
 */
export function shapeToTypeSource(shape: Shape): string {
  return shape.types.length === 0 ? 'unknown' : shape.types.map((type) => member(shape, type)).join(' | ');
}

function member(shape: Shape, type: JsonType): string {
  switch (type) {
    case 'object': {
      if (shape.map !== undefined) return `Record<string, ${shapeToTypeSource(shape.map)}>`;
      // Objects deeper than the inference looked: their fields are not known.
      if (shape.properties === undefined) return 'Record<string, unknown>';
      const properties = shape.properties;
      const keys = Object.keys(properties);
      // Every sample had an empty object here: no field to read.
      if (keys.length === 0) return '{}';
      const required = new Set(shape.required);
      const fields = keys.map((key) => {
        const field = properties[key]!;
        if (required.has(key)) return `${doc(field)}  ${propertyKey(key)}: ${indent(shapeToTypeSource(field))};\n`;
        // Absent, it reads as what every object inherits under that name; the schema leaves it unchecked.
        if (isInheritedName(key)) return `  /** ${describeShape(field)} when present; absent, the inherited one */\n  ${propertyKey(key)}?: unknown;\n`;
        return `${doc(field)}  ${propertyKey(key)}?: ${indent(shapeToTypeSource(field))};\n`;
      });
      return `{\n${fields.join('')}}`;
    }
    case 'array': {
      if (shape.items === undefined) return 'unknown[]';
      const items = shapeToTypeSource(shape.items);
      return shape.items.types.length > 1 ? `(${items})[]` : `${items}[]`;
    }
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
  }
}

/** A field's doc line: what the TypeScript type cannot say. */
function doc(field: Shape): string {
  const notes: string[] = [];
  if (field.types.includes('integer')) notes.push('integer');
  if (field.format !== undefined) notes.push(field.format);
  if (field.values !== undefined) notes.push(`seen: ${field.values.map((v) => JSON.stringify(v)).join(', ')}`);
  // A value may hold "*/", which would end the comment.
  return notes.length === 0 ? '' : `  /** ${notes.join('; ').replaceAll('*/', '*\\/')} */\n`;
}
