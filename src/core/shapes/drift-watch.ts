import type { SchemaDriftFacts } from '../alerts/alert-message.js';
import { countWork } from '../observability/work-count.js';
import type { MaintenanceStore } from '../delivery-store.js';
import type { NewDelivery } from '../delivery.js';
import type { Logger } from '../observability/logger.js';
import { driftCheckFor, type DriftDifference, type DriftFinding } from './payload-drift.js';
import type { PayloadShapes } from './shape.js';

export interface DriftWatchOptions {
  /** The learned shapes (the registry's `payloadShapes`). */
  shapes: PayloadShapes;
  store: Pick<MaintenanceStore, 'recordDrift'>;
  alerts: { schemaDrift(facts: SchemaDriftFacts): Promise<void> };
  logger: Logger;
  /** Observes each drifted delivery's differences (Node's metrics). */
  onDrift?: (eventType: string, differences: readonly DriftDifference[]) => void;
}

/**
 * Checks one stored delivery's payload: undefined when it fits (no promise, nothing allocated),
 * else a promise that resolves once the drift is recorded. Never throws or rejects.
 */
export type DriftWatch = (delivery: Pick<NewDelivery, 'eventId' | 'eventType' | 'status' | 'payload'>) => Promise<void> | undefined;

/**
 * Drift, noticed at the door: each new delivery stored `queued` (its body parsed) is checked
 * against its type's learned shape, after it was stored and answered. One that fits costs one
 * walk of its payload and nothing else. One that does not: a warn line `payload drift` and an
 * `onDrift` call with the path and kind of each difference (never a value from the body), one
 * `schema_drift` alert per difference, rate-limited per type, kind and place in the learned shape
 * (a map's values, the object that gained a field: never per key of the sender's), and the
 * differences recorded on the delivery (`drift`, for the admin API and the inspector).
 */
export function createDriftWatch({ shapes, store, alerts, logger, onDrift }: DriftWatchOptions): DriftWatch {
  const check = driftCheckFor(shapes);
  return function watchDrift({ eventId, eventType, status, payload }) {
    if (status !== 'queued') return undefined;
    let findings: DriftFinding[] | null;
    try {
      countWork('schema_run');
      findings = check(eventType, payload);
    } catch (error) {
      logger.error({ event_id: eventId, event_type: eventType, err: (error as Error).message }, 'drift check failed');
      return undefined;
    }
    if (findings === null) return undefined;
    const differences: DriftDifference[] = findings.map(({ path, kind, message }) => ({ path, kind, message }));
    onDrift?.(eventType, differences);
    logger.warn({ event_id: eventId, event_type: eventType, drift: differences.map(({ path, kind }) => ({ path, kind })) }, 'payload drift');
    for (const { path, place, kind } of findings) void alerts.schemaDrift({ eventId, eventType, path, place, change: kind });
    return store.recordDrift(eventId, differences).catch((error: Error) => logger.error({ event_id: eventId, err: error.message }, 'payload drift not recorded'));
  };
}
