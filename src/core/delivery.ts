import type { DriftDifference } from './shapes/payload-drift.js';

/**
 * What a stored delivery is. Statuses follow the inbox life cycle:
 * `queued` → `processed`, or `failed` (will retry) → `processed` / `dead`; `ignored` when no
 * handler takes the type; `dead` at once when an authentic body cannot be parsed; `quarantined`
 * (never dispatched until a person replays it) when it conflicts with a stored delivery.
 */
export const DELIVERY_STATUSES = ['queued', 'processed', 'failed', 'dead', 'ignored', 'quarantined'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** A delivery as ingest hands it to the store, already authenticated. */
export interface NewDelivery {
  eventId: string;
  eventType: string;
  /** The signature's `t`, in seconds. */
  signatureT: number;
  /** SHA-256 of `<t>.<body>`: the same signed content under another id or type is a replay. */
  contentDigest: Uint8Array;
  /** The raw body bytes exactly as sent. */
  body: Uint8Array;
  /** Request headers worth keeping for replay; never the signature. */
  headers: Record<string, string>;
  /** Milliseconds since the epoch. */
  receivedAt: number;
  status: Extract<DeliveryStatus, 'queued' | 'dead' | 'ignored'>;
  lastError: string | null;
  /**
   * A dispatch lease taken with the insert (hand-off): this process's dispatcher runs the new
   * delivery at once, with no separate lease statement; others skip it until `until`.
   */
  lease?: LeaseGrant;
  /** The body as ingest parsed it (never stored): a hand-off dispatches it without parsing again. */
  payload?: unknown;
  /** Its ordered handlers' places in their keys' order, stored with the claim of a new delivery. */
  order?: readonly OrderEntry[];
  /** The ingest span's context as W3C `traceparent` text, when tracing is on (core/tracing). */
  traceParent?: string | null;
}

/** One ordered handler's place in its key's order, written with the claim of a new delivery. */
export interface OrderEntry {
  handler: string;
  key: string;
  /** When the event happened (epoch ms). */
  at: number;
}

/** A lease a dispatcher reserved for a delivery it is about to run. */
export interface LeaseGrant {
  owner: string;
  /**
   * This claim's fencing token: renewals and the outcome write match it, so a dispatcher whose
   * lease ran out and was taken over (paused, partitioned) can neither renew nor record over the new claim.
   */
  claimId: string;
  /** Epoch ms. */
  until: number;
}

/** A stored delivery row. Times are milliseconds since the epoch. */
export interface Delivery {
  eventId: string;
  eventType: string;
  signatureT: number;
  body: Uint8Array;
  headers: Record<string, string>;
  receivedAt: number;
  lastReceivedAt: number;
  deliveryCount: number;
  status: DeliveryStatus;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: number | null;
  processedAt: number | null;
  /** How long the last dispatch attempt's handlers ran, when known (the admin API shows it). */
  durationMs?: number;
  /** The stored delivery this one conflicted with, when it was quarantined (kept after a replay). */
  conflictWith?: string | null;
  /** The dispatcher (replica) that ran its last attempt, when one did. */
  ranBy?: string | null;
  /** Its receipt's trace context (`traceparent` text), when it was received with tracing on: every attempt links to it. */
  traceParent?: string | null;
  /** How its payload differed from its type's learned shape when it arrived (absent: it fit, or was not checked). */
  drift?: DriftDifference[];
}

/** The row a new delivery becomes when its claim commits (what the store would read back). */
export function storedDelivery(d: NewDelivery): Delivery {
  return {
    eventId: d.eventId,
    eventType: d.eventType,
    signatureT: d.signatureT,
    body: d.body,
    headers: d.headers,
    receivedAt: d.receivedAt,
    lastReceivedAt: d.receivedAt,
    deliveryCount: 1,
    status: d.status,
    attempts: 0,
    lastError: d.lastError,
    nextAttemptAt: d.status === 'queued' ? d.receivedAt : null,
    processedAt: null,
    traceParent: d.traceParent ?? null,
  };
}

/** The answer of an atomic claim: new, a duplicate of a stored id, or a replay of signed content. */
export type ClaimResult =
  | { outcome: 'new' }
  | { outcome: 'duplicate'; deliveryCount: number }
  | { outcome: 'conflict' };

/** The answer of a quarantine: stored as a conflict, or a further copy of one already quarantined. */
export type QuarantineResult =
  | { outcome: 'quarantined'; eventId: string; conflictWith: { eventId: string; eventType: string } | null }
  | { outcome: 'duplicate'; deliveryCount: number }
  | { outcome: 'conflict' };
