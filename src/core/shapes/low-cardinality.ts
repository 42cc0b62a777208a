/**
 * How many distinct values of one string field are kept while merging, at most: enough to name
 * the new values `--check` finds, few enough that memory stays bounded however many samples.
 */
export const TRACKED_VALUES = 32;

/** A value longer than this (in UTF-16 units) is prose or an id, not a state: its field is not low-cardinality. */
export const MAX_VALUE_LENGTH = 64;

/** When a string field's values are recorded in its shape (`Shape.values`). */
export interface LowCardinalityRule {
  /** At most this many distinct values (at most `TRACKED_VALUES`). */
  maxValues: number;
  /** At least this many strings seen at that place (few samples make every field look low-cardinality). */
  minOccurrences: number;
  /** Also when every value was a uuid or a date-time. */
  withFormats: boolean;
}

/**
 * The rule for the shapes a generated module records: at most 12 distinct values over at least 20
 * strings seen at that place, none longer than 64 characters, and not uuids or date-times (ids
 * and times are not states, however few of them were seen). `status: "active" | "provisioning"`
 * over 500 samples is recorded; a pod's `name` over 500 samples is not, nor any field seen 19 times.
 */
export const LOW_CARDINALITY: LowCardinalityRule = { maxValues: 12, minOccurrences: 20, withFormats: false };

/**
 * Every value seen, up to `TRACKED_VALUES`: the shapes `--check` compares with a committed file,
 * so a new value of a field the file records is named however few samples brought it.
 */
export const EVERY_VALUE: LowCardinalityRule = { maxValues: TRACKED_VALUES, minOccurrences: 1, withFormats: true };
