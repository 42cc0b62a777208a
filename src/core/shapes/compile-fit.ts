import { MAX_DEPTH } from './_shape-node.js';
import type { Shape } from './shape.js';
import { isDateTime, isUuid } from './string-format.js';

/** Whether a value fits a shape: true exactly when `checkShapes` would find no difference for it alone. */
export type FitCheck = (value: unknown) => boolean;

type Check = (value: unknown, depth: number) => boolean;

/**
 * Compiles a shape into a check that walks a payload and answers whether it fits, allocating
 * nothing: the fast path of the drift check at the door, where nearly every delivery fits. It
 * asks what `checkShapes(committed, shapes of [value])` asks, place by place: a JSON type the
 * shape has (an integer fits a number), null only where nullable, the string's format and one of
 * its recorded values, no key the shape lacks, every required key present, array items and map
 * values each fitting; nothing below `MAX_DEPTH`, as the inference does not look there.
 */
export function compileFit(shape: Shape): FitCheck {
  const check = compile(shape);
  return (value) => check(value, 0);
}

function compile(shape: Shape): Check {
  const types = new Set(shape.types);
  const nullable = types.has('null');
  const strings = types.has('string');
  const integers = types.has('integer') || types.has('number');
  const numbers = types.has('number');
  const booleans = types.has('boolean');
  const { format } = shape;
  const values = shape.values === undefined ? undefined : new Set(shape.values);
  const object = types.has('object') ? compileObject(shape) : undefined;
  const array = types.has('array') ? compileArray(shape) : undefined;
  return function fits(value, depth) {
    if (value === null) return nullable;
    switch (typeof value) {
      case 'string':
        if (!strings) return false;
        if (format === 'uuid' ? !isUuid(value) : format === 'date-time' ? !isDateTime(value) : false) return false;
        return values === undefined || values.has(value);
      case 'number':
        return Number.isSafeInteger(value) ? integers : numbers;
      case 'boolean':
        return booleans;
      case 'object':
        return Array.isArray(value) ? array !== undefined && array(value, depth) : object !== undefined && object(value, depth);
      default:
        return false;
    }
  };
}

function compileObject(shape: Shape): Check {
  if (shape.map !== undefined) {
    const each = compile(shape.map);
    return (value, depth) => {
      if (depth >= MAX_DEPTH) return true;
      const object = value as Record<string, unknown>;
      for (const key of Object.keys(object)) if (!each(object[key], depth + 1)) return false;
      return true;
    };
  }
  // Not looked into when the shape was learned (deeper than MAX_DEPTH): nothing to compare.
  if (shape.properties === undefined) return () => true;
  const properties = shape.properties;
  const fields = new Map(Object.keys(properties).map((key) => [key, compile(properties[key]!)]));
  const required = shape.required ?? [];
  return (value, depth) => {
    if (depth >= MAX_DEPTH) return true;
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const field = fields.get(key);
      if (field === undefined || !field(object[key], depth + 1)) return false;
    }
    for (const key of required) if (!Object.hasOwn(object, key)) return false;
    return true;
  };
}

function compileArray(shape: Shape): Check {
  // Arrays were always empty: an item is a change.
  if (shape.items === undefined) return (value, depth) => depth >= MAX_DEPTH || (value as unknown[]).length === 0;
  const each = compile(shape.items);
  return (value, depth) => {
    if (depth >= MAX_DEPTH) return true;
    for (const item of value as unknown[]) if (!each(item, depth + 1)) return false;
    return true;
  };
}
