import { MAX_VALUE_LENGTH, TRACKED_VALUES } from './low-cardinality.js';
import { describeShape, type PayloadShapes, type Shape } from './shape.js';
import { MAX_PROPERTIES } from './_shape-node.js';
import { isIdentifier } from './_source-text.js';

/** What kind of change a difference is. */
export type DifferenceKind = 'new_type' | 'new_field' | 'field_gone' | 'changed_type' | 'new_value';

/** One way the samples no longer fit the committed shapes. */
export interface ShapeDifference {
  eventType: string;
  /** The JSONPath of the place: `$`, `$.pod.status`, `$.items[*].id` (every item), `$.labels.*` (every value of a map). */
  path: string;
  /**
   * The same place in the committed shape's terms, which no sender's key can multiply: a map's
   * value as `.*` (`$.usage.*.cpu` where `path` is `$.usage["3f2a…"].cpu`), and a new field as the
   * object that gained it (`$.pod` for `$.pod.region`).
   */
  place: string;
  kind: DifferenceKind;
  /** For a person; starts with the kind in words: `new field: …`, `field gone: …`, `changed type: …`, `new value …`, `new type: …`. */
  message: string;
}

/** Where a difference is: the payload's own path, and its place in the committed shape. */
interface Where {
  path: string;
  place: string;
}

type Add = (kind: DifferenceKind, at: Where, message: string) => void;

/**
 * Compares the shapes of new samples with committed ones and lists every difference, in type
 * order then place by place (keys sorted): a new field; a required field missing from some or
 * every sample; a changed type (a new JSON type, integer to number, a lost uuid or date-time
 * format, nullable now); a new value of a low-cardinality string. Fewer types, a field no longer
 * nullable, or an optional field not seen are no difference: the samples still fit. A type the
 * committed shapes lack is one `new_type` line; a committed type without samples is not compared.
 *
 * `observed` must record every value seen (`inference.shapes(EVERY_VALUE)`), so a new value of a
 * committed low-cardinality field is named however rarely it came.
 */
export function checkShapes(committed: PayloadShapes, observed: PayloadShapes): ShapeDifference[] {
  const differences: ShapeDifference[] = [];
  for (const [eventType, now] of Object.entries(observed.types)) {
    const add: Add = (kind, { path, place }, message) => differences.push({ eventType, path, place, kind, message });
    const root = { path: '$', place: '$' };
    if (!Object.hasOwn(committed.types, eventType)) {
      add('new_type', root, `new type: ${now.samples} ${now.samples === 1 ? 'sample' : 'samples'}, and no shape for it in the file`);
    } else {
      compare(committed.types[eventType]!.shape, now.shape, root, add);
    }
  }
  return differences;
}

/** One line for a person and for grep: `pod.created $.pod.status: new value "paused" (seen: "active", "provisioning")`. */
export const formatDifference = (d: ShapeDifference): string => `${d.eventType} ${d.path}: ${d.message}`;

/** JSONPaths: a field (`$.pod.status`, `$["content-type"]`), every item of an array (`$.items[*]`), every value of a map (`$.labels.*`). */
const fieldPath = (path: string, key: string) => (isIdentifier(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`);
const itemsPath = (path: string) => `${path}[*]`;
const mapValuesPath = (path: string) => `${path}.*`;
const field = (at: Where, key: string): Where => ({ path: fieldPath(at.path, key), place: fieldPath(at.place, key) });
const items = (at: Where): Where => ({ path: itemsPath(at.path), place: itemsPath(at.place) });
/** A value of a map under one of the sender's keys: its place is every value's. */
const mapValue = (at: Where, key: string): Where => ({ path: fieldPath(at.path, key), place: mapValuesPath(at.place) });

const list = (values: readonly string[]) => values.map((v) => JSON.stringify(v)).join(', ');

function compare(was: Shape, now: Shape, path: Where, add: Add): void {
  const had = new Set(was.types);
  const has = (type: Shape['types'][number]) => had.has(type) && now.types.includes(type);
  if (now.types.includes('null') && !had.has('null')) add('changed_type', path, `changed type: now nullable (was ${describeShape(was)})`);
  if (now.types.includes('number') && had.has('integer')) add('changed_type', path, 'changed type: integer → number (a value with a fraction)');
  const added = now.types.filter((type) => type !== 'null' && !had.has(type) && !(type === 'integer' && had.has('number')) && !(type === 'number' && had.has('integer')));
  if (added.length > 0) add('changed_type', path, `changed type: now also ${added.join(' | ')} (was ${describeShape(was)})`);

  if (has('string')) {
    if (was.format !== undefined && now.format !== was.format) add('changed_type', path, `changed type: not always a ${was.format} now`);
    if (was.values !== undefined) {
      const known = new Set(was.values);
      if (now.values === undefined) {
        add('new_value', path, `new values: more than ${TRACKED_VALUES} distinct or longer than ${MAX_VALUE_LENGTH} characters (seen: ${list(was.values)})`);
      } else {
        for (const value of now.values) if (!known.has(value)) add('new_value', path, `new value ${JSON.stringify(value)} (seen: ${list(was.values)})`);
      }
    }
  }
  if (has('object')) compareObjects(was, now, path, add);
  if (has('array') && now.items !== undefined) {
    if (was.items === undefined) add('changed_type', items(path), `changed type: arrays have items now (were always empty): ${describeShape(now.items)}`);
    else compare(was.items, now.items, items(path), add);
  }
}

function compareObjects(was: Shape, now: Shape, path: Where, add: Add): void {
  if (was.map !== undefined) {
    if (now.map !== undefined) compare(was.map, now.map, { path: mapValuesPath(path.path), place: mapValuesPath(path.place) }, add);
    else for (const [key, shape] of Object.entries(now.properties ?? {})) compare(was.map, shape, mapValue(path, key), add);
    return;
  }
  // Not looked into when committed (deeper than MAX_DEPTH): nothing to compare.
  if (was.properties === undefined) return;
  if (now.map !== undefined) {
    add('changed_type', path, `changed type: now a map (more than ${MAX_PROPERTIES} distinct keys)`);
    return;
  }
  if (now.properties === undefined) return;
  const before = was.properties;
  const after = now.properties;
  const required = new Set(was.required);
  const stillRequired = new Set(now.required);
  for (const key of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    const at = field(path, key);
    const known = Object.hasOwn(before, key);
    const seen = Object.hasOwn(after, key);
    // A new key is the sender's to choose: its place is the object that gained it.
    if (!known) add('new_field', { path: at.path, place: path.place }, `new field: ${describeShape(after[key]!)}`);
    else if (!seen) {
      if (required.has(key)) add('field_gone', at, 'field gone: was required, missing from every sample');
    } else {
      if (required.has(key) && !stillRequired.has(key)) add('field_gone', at, 'field gone: was required, missing from some samples');
      compare(before[key]!, after[key]!, at, add);
    }
  }
}
