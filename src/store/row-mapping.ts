import { and, eq, gte, isNotNull, isNull, or, type Column, type SQL } from 'drizzle-orm';
import type { HeartbeatRecord } from '../core/alerts/heartbeat-store.js';
import type { Downtime } from '../core/alerts/retry-outlook.js';
import type { DispatchOutcome, HandlerAttempt, HandlerAttemptOutcome, HandlerRun, ImportedDelivery, ListDeliveriesOptions, StoredSecret } from '../core/delivery-store.js';
import type { Delivery, NewDelivery, QuarantineResult } from '../core/delivery.js';
import type { DriftDifference } from '../core/shapes/payload-drift.js';
import type { Tables } from './store-backend.js';

/**
 * How rows are written and read, the same in every dialect (the SQLite and PostgreSQL schemas
 * have the same columns under the same names): one place for every backend.
 */

/** A `deliveries` row as drizzle reads it (the same shape in both dialects). */
export type DeliveryRow = Tables['deliveries']['$inferSelect'];

/** The columns a claim writes. */
export interface ClaimParams {
  eventId: string;
  eventType: string;
  signatureT: number;
  contentDigest: Uint8Array;
  body: Uint8Array;
  headers: string;
  receivedAt: number;
  status: NewDelivery['status'];
  lastError: string | null;
  nextAttemptAt: number | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  claimId: string | null;
  traceParent: string | null;
}

export function claimParams(d: NewDelivery): ClaimParams {
  return {
    eventId: d.eventId,
    eventType: d.eventType,
    signatureT: d.signatureT,
    contentDigest: d.contentDigest,
    body: d.body,
    headers: JSON.stringify(d.headers),
    receivedAt: d.receivedAt,
    status: d.status,
    lastError: d.lastError,
    nextAttemptAt: d.status === 'queued' ? d.receivedAt : null,
    leaseOwner: d.lease?.owner ?? null,
    leaseUntil: d.lease?.until ?? null,
    claimId: d.lease?.claimId ?? null,
    traceParent: d.traceParent ?? null,
  };
}

export function toDelivery(row: DeliveryRow): Delivery {
  return {
    eventId: row.eventId,
    eventType: row.eventType,
    signatureT: row.signatureT,
    body: row.body,
    headers: JSON.parse(row.headers) as Record<string, string>,
    receivedAt: row.receivedAt,
    lastReceivedAt: row.lastReceivedAt,
    deliveryCount: row.deliveryCount,
    status: row.status,
    attempts: row.attempts,
    lastError: row.lastError,
    nextAttemptAt: row.nextAttemptAt,
    processedAt: row.processedAt,
    ...(row.durationMs === null ? {} : { durationMs: row.durationMs }),
    conflictWith: row.conflictWith,
    ranBy: row.ranBy,
    traceParent: row.traceParent,
    ...(row.drift === null ? {} : { drift: JSON.parse(row.drift) as DriftDifference[] }),
  };
}

/** The columns an outcome writes to its delivery. */
export interface OutcomeParams {
  eventId: string;
  claimId: string;
  status: DispatchOutcome['status'];
  attempts: number;
  lastError: string | null;
  nextAttemptAt: number | null;
  processedAt: number | null;
  durationMs: number | null;
  /** The lease owner that ran the attempt. */
  ranBy: string;
}

/**
 * The columns an outcome writes per handler run: its ledger row (one per handler, the last run)
 * and its row in the run history (`outcome`, `ranBy`).
 */
export type HandlerRunParams = Omit<HandlerRun, 'durationMs' | 'at' | 'outcome'> & {
  updatedAt: number;
  durationMs: number | null;
  claimId: string;
  outcome: HandlerAttemptOutcome;
  ranBy: string;
};

/**
 * An outcome's columns: the delivery's, each run's (ledger and history), and the earlier runs it
 * records in the history only (`DispatchOutcome.history`).
 */
export function outcomeParams(o: DispatchOutcome): { outcome: OutcomeParams; runs: HandlerRunParams[]; history: HandlerRunParams[] } {
  const claimId = o.claimId ?? o.owner;
  return {
    outcome: {
      eventId: o.eventId,
      claimId: o.claimId ?? o.owner,
      status: o.status,
      attempts: o.attempts,
      lastError: o.lastError,
      nextAttemptAt: o.nextAttemptAt,
      processedAt: o.status === 'processed' ? o.now : null,
      durationMs: o.durationMs ?? null,
      ranBy: o.owner,
    },
    runs: o.runs.map((r) => ({
      eventId: r.eventId,
      handler: r.handler,
      status: r.status,
      attempts: r.attempts,
      lastError: r.lastError,
      updatedAt: o.now,
      durationMs: r.durationMs ?? null,
      claimId,
      outcome: r.outcome ?? (r.status === 'succeeded' ? 'succeeded' : 'failed'),
      ranBy: o.owner,
    })),
    history: (o.history ?? []).map((h) => earlierRunParams(h, claimId)),
  };
}

/** An earlier run's row in the run history, as it was (an unknown replica is written as ''). */
export function earlierRunParams(h: HandlerAttempt, claimId: string): HandlerRunParams {
  return {
    eventId: h.eventId,
    handler: h.handler,
    status: h.outcome === 'succeeded' ? 'succeeded' : 'failed',
    attempts: h.attempt,
    lastError: h.error,
    updatedAt: h.at,
    durationMs: h.durationMs,
    claimId,
    outcome: h.outcome,
    ranBy: h.ranBy,
  };
}

/** The last error a quarantined row carries: why it is not dispatched. */
export const QUARANTINED_ERROR = 'conflict: the same signed content or event id is stored as another delivery (see conflict_with)';

/** A quarantine's answer from its three statements' rows (see each dialect's quarantine). */
export function toQuarantineResult(
  stored: readonly { eventId: string; eventType: string }[],
  bumped: readonly { deliveryCount: number }[],
  inserted: readonly { eventId: string }[],
): QuarantineResult {
  if (bumped.length > 0) return { outcome: 'duplicate', deliveryCount: Number(bumped[0]!.deliveryCount) };
  if (inserted.length > 0) return { outcome: 'quarantined', eventId: inserted[0]!.eventId, conflictWith: stored[0] ?? null };
  return { outcome: 'conflict' };
}

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
  drift: d.drift ? JSON.stringify(d.drift) : null,
});

/** The import's answer for one row, from what was stored under its id before and whether the insert took. */
export const importResult = (d: ImportedDelivery, stored: { eventType: string; deliveryCount: number } | undefined, inserted: boolean) =>
  stored
    ? stored.eventType === d.eventType
      ? ({ outcome: 'duplicate', deliveryCount: Number(stored.deliveryCount) } as const)
      : ({ outcome: 'conflict' } as const)
    : inserted
      ? ({ outcome: 'new' } as const)
      : ({ outcome: 'conflict' } as const);

export const heartbeatRecord = (row: { beatAt: number; downFrom: number | null; downUntil: number | null }): HeartbeatRecord => ({
  beatAt: row.beatAt,
  downtime: row.downFrom !== null && row.downUntil !== null ? { from: row.downFrom, until: row.downUntil } : null,
});

export const downtimeColumns = (downtime?: Downtime) => (downtime ? { downFrom: downtime.from, downUntil: downtime.until } : {});

/** The status, type, since and drift filters of `list` and `scan`. */
export function deliveryFilters(
  t: { status: Column; eventType: Column; receivedAt: Column; drift: Column },
  { status, eventType, since, drift }: Pick<ListDeliveriesOptions, 'status' | 'eventType' | 'since' | 'drift'>,
  ...more: (SQL | undefined)[]
): SQL | undefined {
  return and(
    status ? eq(t.status, status) : undefined,
    eventType ? eq(t.eventType, eventType) : undefined,
    since !== undefined ? gte(t.receivedAt, since) : undefined,
    drift === undefined ? undefined : drift ? isNotNull(t.drift) : isNull(t.drift),
    ...more,
  );
}

/** Secrets are removed by id or fingerprint. */
export const secretMatch = (t: { id: Column; fingerprint: Column }, idOrFingerprint: string) =>
  or(eq(t.id, idOrFingerprint), eq(t.fingerprint, idOrFingerprint));
