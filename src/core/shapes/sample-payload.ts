import { JSON_TYPES, type JsonType, type Shape } from './shape.js';

export interface SamplePayloadOptions {
  /** "Now", in ms since the epoch: every date-time is this instant. */
  now: number;
  /** Seeds the uuids (default: a random seed). The same seed and `now` give the same payload. */
  seed?: number;
}

/** A small deterministic PRNG (mulberry32). */
function generator(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A version-4 uuid from the generator (what `z.uuid()` accepts). */
function uuid(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16));
  hex[12] = '4';
  hex[16] = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  const h = hex.join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * A payload made from a learned shape, for `podhook trigger` and `testEvent`: the fields every
 * sample had (optional ones left out), a low-cardinality string's first recorded value, uuids and
 * date-times where the shape says so (date-times are `now`), integers as 1, other numbers as 1.5,
 * booleans true, other strings their field's name, one item per array that had items, an empty
 * map. Where several JSON types were seen, the first in `JSON_TYPES` order that is not null. It
 * fits the shape: the drift check finds nothing in it, and its generated schema parses it.
 */
export function samplePayload(shape: Shape, { now, seed = Math.floor(Math.random() * 2 ** 32) }: SamplePayloadOptions): unknown {
  const random = generator(seed);
  const time = new Date(now).toISOString();
  const value = (at: Shape, name: string): unknown => {
    const type = JSON_TYPES.find((t): t is Exclude<JsonType, 'null'> => t !== 'null' && at.types.includes(t));
    switch (type) {
      case undefined:
        return null;
      case 'object': {
        const { properties } = at;
        if (at.map !== undefined || properties === undefined) return {};
        // fromEntries defines each key as data: a "__proto__" field stays a field.
        return Object.fromEntries((at.required ?? []).map((key) => [key, value(properties[key]!, key)]));
      }
      case 'array':
        return at.items === undefined ? [] : [value(at.items, name)];
      case 'string':
        if (at.values !== undefined && at.values.length > 0) return at.values[0];
        return at.format === 'uuid' ? uuid(random) : at.format === 'date-time' ? time : name || 'text';
      case 'integer':
        return 1;
      case 'number':
        return 1.5;
      case 'boolean':
        return true;
    }
  };
  return value(shape, '');
}
