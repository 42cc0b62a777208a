import { z } from 'zod';
import { base64ToBytes, bytesToBase64 } from './base64.js';
import { DELIVERY_STATUSES, type Delivery } from '../delivery.js';
import { PodhookError } from '../errors.js';
import { keptHeaders } from '../ingest/kept-headers.js';
import { MAX_DRIFT_DIFFERENCES, type DriftDifference } from '../shapes/payload-drift.js';
import type { ParkedRun } from '../steps/step-record.js';

/**
 * The export format: JSON Lines, one self-describing object per delivery, each carrying this
 * `format` tag (so files concatenate and a line stands alone). Within v1, fields may be added
 * and readers ignore fields they do not know; anything else gets a new version.
 */
export const DELIVERY_EXPORT_FORMAT = 'podhook.delivery.v1';

const isoTime = z.iso.datetime({ offset: true }).transform((s) => Date.parse(s));
const count = z.number().int().nonnegative();

const ExportRecordSchema = z.object({
  format: z.string().refine((f) => f === DELIVERY_EXPORT_FORMAT, {
    error: (issue) => `unsupported format ${JSON.stringify(issue.input)} (this podhook reads ${DELIVERY_EXPORT_FORMAT})`,
  }),
  event_id: z.guid().transform((id) => id.toLowerCase()),
  event_type: z.string().min(1).max(200),
  signature_t: z.number().int().positive(),
  received_at: isoTime,
  last_received_at: isoTime.optional(),
  delivery_count: count.min(1).default(1),
  status: z.enum(DELIVERY_STATUSES),
  attempts: count.default(0),
  last_error: z.string().nullable().default(null),
  next_attempt_at: isoTime.nullable().default(null),
  processed_at: isoTime.nullable().default(null),
  headers: z.record(z.string(), z.string()).default({}),
  conflict_with: z.guid().transform((id) => id.toLowerCase()).nullable().optional(),
  trace_parent: z.string().max(256).nullable().optional(),
  drift: z
    .array(z.object({ path: z.string().max(500), kind: z.enum(['new_type', 'new_field', 'field_gone', 'changed_type', 'new_value']), message: z.string().max(500) }))
    .max(MAX_DRIFT_DIFFERENCES)
    .nullable()
    .optional(),
  body_base64: z.string().transform((text, ctx) => {
    try {
      return base64ToBytes(text);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be padded standard base64' });
      return z.NEVER;
    }
  }),
});

/** One line of an export, as written (before JSON encoding). */
export interface ExportRecord {
  format: typeof DELIVERY_EXPORT_FORMAT;
  event_id: string;
  event_type: string;
  /** The signature's `t` (Unix seconds) the delivery was first received with. */
  signature_t: number;
  received_at: string;
  last_received_at: string;
  delivery_count: number;
  status: Delivery['status'];
  attempts: number;
  last_error: string | null;
  next_attempt_at: string | null;
  processed_at: string | null;
  /** The request headers kept at ingest (never the signature). */
  headers: Record<string, string>;
  /** The stored delivery a quarantined one conflicted with (absent otherwise). */
  conflict_with?: string;
  /** Its receipt's trace context (W3C `traceparent`), when it was received with tracing on: an importer's attempts link to it. */
  trace_parent?: string;
  /** How its payload differed from its type's learned shape when it arrived (absent when it fit, or was not checked). */
  drift?: DriftDifference[];
  /** The raw body, byte-exact: base64 keeps bytes that are not UTF-8. */
  body_base64: string;
}

/**
 * A delivery as one row of `podhook deliveries --json`, `GET /_podhook/api/deliveries` and the
 * test kit's `deliveries()`: the export record's fields, the body's size instead of the body and
 * its headers, and `conflict_with` always present.
 */
export interface DeliveryRow
  extends Pick<
    ExportRecord,
    | 'event_id'
    | 'event_type'
    | 'status'
    | 'attempts'
    | 'delivery_count'
    | 'received_at'
    | 'last_received_at'
    | 'last_error'
    | 'signature_t'
    | 'next_attempt_at'
    | 'processed_at'
  > {
  /** The body's size in bytes. */
  body_bytes: number;
  /** The stored delivery a quarantined one conflicts with; null otherwise. */
  conflict_with: string | null;
  /** The delivery one of its ordered handlers waits on (an earlier one of its key, or the one running); null otherwise. */
  waiting_on: string | null;
  /** How its payload differed from its type's learned shape when it arrived (path, kind, message); null when it fit or was not checked. */
  drift: DriftDifference[] | null;
  /**
   * A queued delivery whose handler run is parked at a durable sleep or a wait: which handler, the
   * step's name, when it wakes (the earliest, when more than one of its handlers sleeps; a wait's
   * timeout) and, at a wait, what it waits for; null otherwise.
   */
  parked: { handler: string; step: string; wake_at: string; waiting_for: WaitingFor | null } | null;
}

/** What a run parked at `ctx.waitForEvent` waits for: the event types and the pod (until its `wake_at`, the timeout). */
export interface WaitingFor {
  types: string[];
  pod_id: string;
}

/** A parked run's wait as the rows and the admin API show it; null at a sleep. */
export const waitingForJson = (run: Pick<ParkedRun, 'waitingFor'>): WaitingFor | null => (run.waitingFor ? { types: run.waitingFor.types, pod_id: run.waitingFor.podId } : null);

/** A line of an export file that cannot be read. */
export class ExportFormatError extends PodhookError {
  constructor(message: string) {
    super('invalid_export', 400, message);
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A stored delivery as one row (no body: the export record carries it). */
export function deliveryJson(d: Delivery, waitingOn: string | null = null, parked: ParkedRun | null = null): DeliveryRow {
  return {
    event_id: d.eventId,
    event_type: d.eventType,
    status: d.status,
    attempts: d.attempts,
    delivery_count: d.deliveryCount,
    received_at: iso(d.receivedAt)!,
    last_received_at: iso(d.lastReceivedAt)!,
    last_error: d.lastError,
    signature_t: d.signatureT,
    next_attempt_at: iso(d.nextAttemptAt),
    processed_at: iso(d.processedAt),
    body_bytes: d.body.byteLength,
    conflict_with: d.conflictWith ?? null,
    waiting_on: waitingOn,
    drift: d.drift ?? null,
    parked: parked && { handler: parked.handler, step: parked.step, wake_at: iso(parked.wakeAt)!, waiting_for: waitingForJson(parked) },
  };
}

/** A stored delivery as one export record. */
export function toExportRecord(d: Delivery): ExportRecord {
  return {
    format: DELIVERY_EXPORT_FORMAT,
    event_id: d.eventId,
    event_type: d.eventType,
    signature_t: d.signatureT,
    received_at: iso(d.receivedAt)!,
    last_received_at: iso(d.lastReceivedAt)!,
    delivery_count: d.deliveryCount,
    status: d.status,
    attempts: d.attempts,
    last_error: d.lastError,
    next_attempt_at: iso(d.nextAttemptAt),
    processed_at: iso(d.processedAt),
    // Rows stored before the allowlist may hold more: never export them.
    headers: keptHeaders(d.headers),
    ...(d.conflictWith ? { conflict_with: d.conflictWith } : {}),
    ...(d.traceParent ? { trace_parent: d.traceParent } : {}),
    ...(d.drift ? { drift: d.drift } : {}),
    body_base64: bytesToBase64(d.body),
  };
}

/** A stored delivery as one line of an export file, newline included. */
export function exportLine(d: Delivery): string {
  return `${JSON.stringify(toExportRecord(d))}\n`;
}

/**
 * Reads one line of an export file back into a delivery, body bytes exactly as exported.
 * Throws an `ExportFormatError` naming the first problem.
 */
export function parseExportLine(line: string): Delivery {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (error) {
    throw new ExportFormatError(`not JSON: ${(error as Error).message}`);
  }
  const parsed = ExportRecordSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ExportFormatError(`${issue.path.join('.') || 'record'}: ${issue.message}`);
  }
  const r = parsed.data;
  return {
    eventId: r.event_id,
    eventType: r.event_type,
    signatureT: r.signature_t,
    body: r.body_base64,
    // z.record assigns each key, and assigning `__proto__` sets the prototype instead of keeping
    // the header: rebuild from the validated JSON's own entries so every key comes back as data.
    headers: keptHeaders(Object.fromEntries(Object.entries((json as { headers?: Record<string, string> }).headers ?? {}))),
    receivedAt: r.received_at,
    lastReceivedAt: r.last_received_at ?? r.received_at,
    deliveryCount: r.delivery_count,
    status: r.status,
    attempts: r.attempts,
    lastError: r.last_error,
    nextAttemptAt: r.next_attempt_at,
    processedAt: r.processed_at,
    ...(r.conflict_with ? { conflictWith: r.conflict_with } : {}),
    ...(r.trace_parent ? { traceParent: r.trace_parent } : {}),
    ...(r.drift ? { drift: r.drift } : {}),
  };
}
