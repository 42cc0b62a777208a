import { checkShapes, type DifferenceKind } from './check-shapes.js';
import { compileFit, type FitCheck } from './compile-fit.js';
import { inferShapes } from './infer-shapes.js';
import { EVERY_VALUE } from './low-cardinality.js';
import type { PayloadShapes } from './shape.js';

/**
 * One way a delivery's payload differs from its type's learned shape, as recorded on the delivery.
 * Never a value from the body: a new value of a low-cardinality string is its path and kind only.
 */
export interface DriftDifference {
  /** The JSONPath of the place, as `podhook schemas --check` writes it: `$.pod.region`, `$.items[*].id`. */
  path: string;
  kind: DifferenceKind;
  /** What changed, for a person, with no value from the body: `new field: string`, `changed type: now nullable (was string)`. */
  message: string;
}

/**
 * A difference as the check finds it: what the delivery records, and its place in the learned
 * shape (`ShapeDifference.place`), which keys its alert: a sender's keys do not multiply alerts.
 */
export interface DriftFinding extends DriftDifference {
  place: string;
}

/** The differences a delivery records at most, and the longest path kept (a sender's keys are data). */
export const MAX_DRIFT_DIFFERENCES = 20;
export const MAX_DRIFT_PATH = 200;

/** Checks one payload against its type's learned shape: its differences, or null when it fits or its type has no shape. */
export type DriftCheck = (eventType: string, payload: unknown) => DriftFinding[] | null;

const checks = new WeakMap<PayloadShapes, DriftCheck>();

/**
 * The drift check of a set of learned shapes (the registry's `payloadShapes`), built once per set
 * and kept (the Worker wires a runtime per request). Each type's shape is compiled on first use
 * into a `compileFit` walk that answers "fits" without allocating; only a payload that does not
 * fit is inferred and compared with `checkShapes`, for the detail. A type without a learned shape
 * is not checked (the module says "any JSON object" for it).
 */
export function driftCheckFor(shapes: PayloadShapes): DriftCheck {
  let check = checks.get(shapes);
  if (check === undefined) {
    check = createDriftCheck(shapes);
    checks.set(shapes, check);
  }
  return check;
}

const cut = (path: string) => (path.length > MAX_DRIFT_PATH ? `${path.slice(0, MAX_DRIFT_PATH - 1)}…` : path);

function createDriftCheck(shapes: PayloadShapes): DriftCheck {
  const fits = new Map<string, FitCheck>();
  return (eventType, payload) => {
    if (!Object.hasOwn(shapes.types, eventType)) return null;
    let fit = fits.get(eventType);
    if (fit === undefined) {
      fit = compileFit(shapes.types[eventType]!.shape);
      fits.set(eventType, fit);
    }
    if (fit(payload)) return null;
    const committed: PayloadShapes = { format: shapes.format, types: { [eventType]: shapes.types[eventType]! } };
    const observed = inferShapes([{ eventType, payload, receivedAt: 0 }], EVERY_VALUE);
    const differences = checkShapes(committed, observed).slice(0, MAX_DRIFT_DIFFERENCES);
    return differences.length === 0
      ? null
      : differences.map(({ path, place, kind, message }) => ({
          path: cut(path),
          place: cut(place),
          kind,
          // checkShapes names a new value and the recorded ones; the body's value stays out of the record.
          message: kind === 'new_value' ? 'new value: not one of the values recorded for it' : message,
        }));
  };
}
