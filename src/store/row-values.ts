import { and, eq, gte, or, type Column, type SQL } from 'drizzle-orm';
import type { HeartbeatRecord } from '../core/alerts/heartbeat-store.js';
import type { Downtime } from '../core/alerts/retry-outlook.js';
import type { ImportedDelivery, ListDeliveriesOptions, StoredSecret } from '../core/delivery-store.js';
import { claimParams } from './statements.js';

/**
 * How rows are written and read, the same in every dialect (SQLite and PostgreSQL schemas have
 * the same columns under the same names): one place for both stores.
 */

export const secretRow = (s: StoredSecret) => ({
  id: s.id,
  webhookId: s.webhookId,
  url: s.url,
  eventTypes: s.eventTypes ? JSON.stringify(s.eventTypes) : null,
  secret: s.secret,
  fingerprint: s.fingerprint,
  createdAt: s.createdAt,
});

export const fromSecretRow = (r: ReturnType<typeof secretRow>): StoredSecret => ({
  ...r,
  eventTypes: r.eventTypes ? (JSON.parse(r.eventTypes) as string[]) : null,
});

/** An exported delivery's columns: those of a claim, stored the same way, then what an import keeps beyond them. */
export const importedRow = (d: ImportedDelivery) => ({
  ...claimParams({ ...d, status: 'queued' }),
  status: d.status,
  lastReceivedAt: d.lastReceivedAt,
  deliveryCount: d.deliveryCount,
  attempts: d.attempts,
  // Queued and failed rows stay due on this database, as they were on the other.
  nextAttemptAt: d.status === 'queued' || d.status === 'failed' ? (d.nextAttemptAt ?? d.receivedAt) : null,
  processedAt: d.status === 'processed' ? (d.processedAt ?? d.receivedAt) : null,
  conflictWith: d.conflictWith ?? null,
});

/** The import's answer for one row, from what was stored under its id before and whether the insert took. */
export const importResult = (d: ImportedDelivery, stored: { eventType: string; deliveryCount: number } | undefined, inserted: boolean) =>
  stored
    ? stored.eventType === d.eventType
      ? ({ outcome: 'duplicate', deliveryCount: stored.deliveryCount } as const)
      : ({ outcome: 'conflict' } as const)
    : inserted
      ? ({ outcome: 'new' } as const)
      : ({ outcome: 'conflict' } as const);

export const heartbeatRecord = (row: { beatAt: number; downFrom: number | null; downUntil: number | null }): HeartbeatRecord => ({
  beatAt: row.beatAt,
  downtime: row.downFrom !== null && row.downUntil !== null ? { from: row.downFrom, until: row.downUntil } : null,
});

export const downtimeColumns = (downtime?: Downtime) => (downtime ? { downFrom: downtime.from, downUntil: downtime.until } : {});

/** The status, type and since filters of `list` and `scan`, over either dialect's deliveries table. */
export function deliveryFilters(
  t: { status: Column; eventType: Column; receivedAt: Column },
  { status, eventType, since }: Pick<ListDeliveriesOptions, 'status' | 'eventType' | 'since'>,
  ...more: (SQL | undefined)[]
): SQL | undefined {
  return and(
    status ? eq(t.status, status) : undefined,
    eventType ? eq(t.eventType, eventType) : undefined,
    since !== undefined ? gte(t.receivedAt, since) : undefined,
    ...more,
  );
}

/** Secrets are removed by id or fingerprint. */
export const secretMatch = (t: { id: Column; fingerprint: Column }, idOrFingerprint: string) =>
  or(eq(t.id, idOrFingerprint), eq(t.fingerprint, idOrFingerprint));
