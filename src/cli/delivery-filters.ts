import { DELIVERY_STATUSES, type DeliveryStatus } from '../core/delivery.js';
import type { ScanDeliveriesOptions } from '../core/delivery-store.js';
import { openConfiguredStore } from '../store/node-store.js';
import type { Config } from '../core/config.js';
import { parseIsoTime } from '../core/steps/time-or-duration.js';
import { UsageError } from './command.js';

/** The `--status`, `--type` and `--since` options of `export` and `replay`. */
export const FILTER_OPTIONS = {
  status: { type: 'string' },
  type: { type: 'string' },
  since: { type: 'string' },
} as const;

export const FILTER_HELP = `  --status S    only this status: ${DELIVERY_STATUSES.join(', ')}
  --type T      only this event type (e.g. pod.backup.failed)
  --since ISO   only deliveries received at or after this time (e.g. 2026-05-01 or
                2026-05-01T12:00:00Z)`;

export type DeliveryFilters = Omit<ScanDeliveriesOptions, 'after' | 'limit'>;

/** Reads the filter options; throws a UsageError for a bad value. */
export function parseFilters(values: { status?: string; type?: string; since?: string }): DeliveryFilters {
  const status = values.status;
  if (status !== undefined && !isDeliveryStatus(status)) {
    throw new UsageError(`--status must be one of ${DELIVERY_STATUSES.join(', ')}`);
  }
  const sinceText = values.since;
  const since = sinceText === undefined ? undefined : parseIsoTime(sinceText);
  if (since === null) {
    throw new UsageError(`--since must be an ISO 8601 date or time that exists, e.g. 2026-05-01T12:00:00Z (got ${JSON.stringify(sinceText)})`);
  }
  return { status, eventType: values.type, since };
}

const isDeliveryStatus = (text: string): text is DeliveryStatus => (DELIVERY_STATUSES as readonly string[]).includes(text);

/** Whether any filter was given. */
export const hasFilters = (f: DeliveryFilters) => f.status !== undefined || f.eventType !== undefined || f.since !== undefined;

/** Opens the configured store, which must exist already (a read of a missing SQLite file is a mistake, not an empty store). */
export function openExistingStore(config: Config) {
  return openConfiguredStore(config, { mustExist: true });
}
