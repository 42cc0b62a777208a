import { MAX_VALUE_LENGTH, TRACKED_VALUES, type LowCardinalityRule } from './low-cardinality.js';
import type { JsonType, Shape } from './shape.js';
import { isDateTime, isUuid } from './string-format.js';

/** Values nested deeper than this are counted by JSON type but not looked into (their shape has no `properties` or `items`). */
export const MAX_DEPTH = 32;

/** An object place with more distinct keys than this becomes a map (`Shape.map`): its keys are data, not fields. */
export const MAX_PROPERTIES = 200;

interface Property {
  /** In how many of the objects merged at this place the key was present. */
  present: number;
  node: ShapeNode;
}

/** What has been merged at one place of a payload so far: counts, flags and children, never the values themselves. */
export interface ShapeNode {
  nulls: number;
  booleans: number;
  integers: number;
  /** Numbers with a fraction, or integers beyond 2^53 (which `z.int()` refuses). */
  fractions: number;
  strings: number;
  /** Every string so far was a uuid / a date-time. */
  uuid: boolean;
  dateTime: boolean;
  /** The distinct strings so far; null once there were more than `TRACKED_VALUES` or a longer one than `MAX_VALUE_LENGTH`. */
  values: Set<string> | null;
  objects: number;
  /** Null until an object is looked into here, and once this place is a map. */
  properties: Map<string, Property> | null;
  map: ShapeNode | null;
  arrays: number;
  items: ShapeNode | null;
}

export function newNode(): ShapeNode {
  return {
    nulls: 0,
    booleans: 0,
    integers: 0,
    fractions: 0,
    strings: 0,
    uuid: true,
    dateTime: true,
    values: new Set(),
    objects: 0,
    properties: null,
    map: null,
    arrays: 0,
    items: null,
  };
}

/** Merges one JSON value into the node of its place; `depth` is the place's (the payload is 0). */
export function mergeValue(node: ShapeNode, value: unknown, depth: number): void {
  if (value === null) node.nulls++;
  else if (typeof value === 'string') mergeString(node, value);
  else if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) node.integers++;
    else node.fractions++;
  } else if (typeof value === 'boolean') node.booleans++;
  else if (Array.isArray(value)) {
    node.arrays++;
    if (depth < MAX_DEPTH) for (const item of value) mergeValue((node.items ??= newNode()), item, depth + 1);
  } else if (typeof value === 'object') {
    node.objects++;
    if (depth < MAX_DEPTH) mergeObject(node, value as Record<string, unknown>, depth);
  }
}

function mergeString(node: ShapeNode, value: string): void {
  node.strings++;
  if (node.uuid && !isUuid(value)) node.uuid = false;
  if (node.dateTime && !isDateTime(value)) node.dateTime = false;
  if (node.values !== null && !node.values.has(value)) {
    if (value.length > MAX_VALUE_LENGTH || node.values.size >= TRACKED_VALUES) node.values = null;
    else node.values.add(value);
  }
}

function mergeObject(node: ShapeNode, object: Record<string, unknown>, depth: number): void {
  if (node.map === null) node.properties ??= new Map();
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (node.map === null) {
      const properties = node.properties!;
      let property = properties.get(key);
      if (property === undefined && properties.size < MAX_PROPERTIES) {
        property = { present: 0, node: newNode() };
        properties.set(key, property);
      }
      if (property !== undefined) {
        property.present++;
        mergeValue(property.node, value, depth + 1);
        continue;
      }
      toMap(node);
    }
    mergeValue(node.map!, value, depth + 1);
  }
}

/** Turns an object place into a map: every key's values merged into one node. */
function toMap(node: ShapeNode): void {
  const map = newNode();
  for (const { node: child } of node.properties?.values() ?? []) mergeNodes(map, child);
  node.properties = null;
  node.map = map;
}

/** Merges what `from` has seen into `into` (both of one depth). */
export function mergeNodes(into: ShapeNode, from: ShapeNode): void {
  into.nulls += from.nulls;
  into.booleans += from.booleans;
  into.integers += from.integers;
  into.fractions += from.fractions;
  into.strings += from.strings;
  into.uuid &&= from.uuid;
  into.dateTime &&= from.dateTime;
  into.values = into.values !== null && from.values !== null ? union(into.values, from.values) : null;
  into.objects += from.objects;
  if (from.map !== null && into.map === null) toMap(into);
  if (from.map !== null) mergeNodes(into.map!, from.map);
  for (const [key, property] of from.properties ?? []) {
    if (into.map === null) {
      into.properties ??= new Map();
      let target = into.properties.get(key);
      if (target === undefined && into.properties.size < MAX_PROPERTIES) {
        target = { present: 0, node: newNode() };
        into.properties.set(key, target);
      }
      if (target !== undefined) {
        target.present += property.present;
        mergeNodes(target.node, property.node);
        continue;
      }
      toMap(into);
    }
    mergeNodes(into.map!, property.node);
  }
  into.arrays += from.arrays;
  if (from.items !== null) mergeNodes((into.items ??= newNode()), from.items);
}

function union(into: Set<string>, from: Set<string>): Set<string> | null {
  for (const value of from) {
    into.add(value);
    if (into.size > TRACKED_VALUES) return null;
  }
  return into;
}

/** The shape of what a node has seen; `rule` decides which strings keep their values. */
export function nodeShape(node: ShapeNode, rule: LowCardinalityRule): Shape {
  const types: JsonType[] = [];
  if (node.objects > 0) types.push('object');
  if (node.arrays > 0) types.push('array');
  if (node.strings > 0) types.push('string');
  if (node.fractions > 0) types.push('number');
  else if (node.integers > 0) types.push('integer');
  if (node.booleans > 0) types.push('boolean');
  if (node.nulls > 0) types.push('null');
  const shape: Shape = { types };
  if (node.strings > 0) {
    const format = node.uuid ? 'uuid' : node.dateTime ? 'date-time' : undefined;
    if (format !== undefined) shape.format = format;
    const values = node.values;
    if (values !== null && values.size <= rule.maxValues && node.strings >= rule.minOccurrences && (rule.withFormats || format === undefined)) {
      shape.values = [...values].sort();
    }
  }
  if (node.objects > 0 && node.properties !== null) {
    const properties = node.properties;
    const keys = [...properties.keys()].sort();
    // fromEntries defines each key as data, so a payload's "__proto__" key is kept as a field.
    shape.properties = Object.fromEntries(keys.map((key) => [key, nodeShape(properties.get(key)!.node, rule)]));
    shape.required = keys.filter((key) => properties.get(key)!.present === node.objects);
  }
  if (node.objects > 0 && node.map !== null) shape.map = nodeShape(node.map, rule);
  if (node.items !== null) shape.items = nodeShape(node.items, rule);
  return shape;
}
