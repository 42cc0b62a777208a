import { sql } from 'drizzle-orm';
import { customType, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

/**
 * Raw bytes as a BLOB. better-sqlite3 returns a Buffer, D1 an array of numbers: both come back
 * as a plain Uint8Array so the core sees one type.
 */
const bytes = customType<{ data: Uint8Array; driverData: Uint8Array | ArrayBuffer | number[] }>({
  dataType: () => 'blob',
  toDriver: (value) => value,
  fromDriver: (value) => {
    if (value instanceof Uint8Array) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    if (value instanceof ArrayBuffer) return new Uint8Array(value);
    return Uint8Array.from(value);
  },
});

/** The durable inbox: one row per event id, kept byte-exact for replay. Times are epoch milliseconds. */
export const deliveries = sqliteTable(
  'deliveries',
  {
    eventId: text('event_id').primaryKey(),
    eventType: text('event_type').notNull(),
    signatureT: integer('signature_t').notNull(),
    /** SHA-256 of `<t>.<body>`: the same signed content under another id is a conflict (quarantined). */
    contentDigest: bytes('content_digest').notNull(),
    body: bytes('body').notNull(),
    /** JSON object of the request headers kept for replay (never the signature). */
    headers: text('headers').notNull(),
    receivedAt: integer('received_at').notNull(),
    lastReceivedAt: integer('last_received_at').notNull(),
    deliveryCount: integer('delivery_count').notNull().default(1),
    status: text('status', { enum: ['queued', 'processed', 'failed', 'dead', 'ignored', 'quarantined'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    /** When the dispatcher should next run it (queued: at once; failed: after backoff). */
    nextAttemptAt: integer('next_attempt_at'),
    /** Dispatcher lease: the owner may run its handlers until `lease_until`. */
    leaseOwner: text('lease_owner'),
    leaseUntil: integer('lease_until'),
    /** The claim holding the lease: its renewals and outcome match it (a fencing token). */
    claimId: text('claim_id'),
    processedAt: integer('processed_at'),
    /** How long the last dispatch attempt's handlers ran (they run together: the slowest one). */
    durationMs: integer('duration_ms'),
    /** The stored delivery a quarantined copy conflicts with; such a copy may repeat its signed content. */
    conflictWith: text('conflict_with'),
  },
  (t) => [
    // A replay carries the same t, so (t, digest) identifies signed content as well as the digest
    // alone, and t leads: inserts land at the right edge of the index instead of at random
    // pages, so its cost does not grow with the table.
    // Partial: a quarantined copy repeats the signed content of the delivery it conflicts with.
    uniqueIndex('deliveries_signed_content_uq').on(t.signatureT, t.contentDigest).where(sql`${t.conflictWith} is null`),
    // Partial: only rows waiting for dispatch are indexed, so leasing stays cheap however many
    // processed rows the table holds, and a row leaves the index when it is processed.
    index('deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.status} in ('queued', 'failed')`),
    // Queue depth and dead letters for /metrics without scanning processed rows.
    index('deliveries_open_status_idx').on(t.status).where(sql`${t.status} in ('queued', 'failed', 'dead')`),
    index('deliveries_received_idx').on(t.receivedAt),
  ],
);

/** Per-handler ledger: a success is recorded once, so a retry re-runs only the handlers that failed. */
export const handlerRuns = sqliteTable(
  'handler_runs',
  {
    eventId: text('event_id').notNull(),
    handler: text('handler').notNull(),
    /** `queued`: an operator asked for this handler to run again (admin replay). */
    status: text('status', { enum: ['succeeded', 'failed', 'queued'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    updatedAt: integer('updated_at').notNull(),
    /** The last run's duration (null for a row written before it ran, e.g. `queued`). */
    durationMs: integer('duration_ms'),
    /** How many of the `attempts` runs failed (the row keeps only the last run's outcome). */
    failures: integer('failures').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.eventId, t.handler] })],
);

/** Signing secrets kept by `podhook register` / `podhook secrets add`; all are accepted at once. */
export const webhookSecrets = sqliteTable('webhook_secrets', {
  id: text('id').primaryKey(),
  webhookId: text('webhook_id'),
  url: text('url'),
  /** JSON array of event types, or null for every event. */
  eventTypes: text('event_types'),
  secret: text('secret').notNull(),
  fingerprint: text('fingerprint').notNull().unique(),
  createdAt: integer('created_at').notNull(),
});

/**
 * The receiver's heartbeat (one row, `receiver`, beaten by every process every 30 s) and the
 * last downtime it revealed: a gap between heartbeats is how long nobody answered the sender.
 */
export const heartbeats = sqliteTable('heartbeats', {
  name: text('name').primaryKey(),
  beatAt: integer('beat_at').notNull(),
  downFrom: integer('down_from'),
  downUntil: integer('down_until'),
});

/**
 * `podhook listen`: where each followed remote's export was last read, so a listen started again
 * fetches what was stored there meanwhile. Keyed by the remote's URL (origin and path).
 */
export const listenCursors = sqliteTable('listen_cursors', {
  remote: text('remote').primaryKey(),
  /** The remote's own `x-podhook-next-cursor` (opaque here); null until a delivery was seen. */
  cursor: text('cursor'),
  /** Where the first listen started (epoch ms): the start again while no delivery was seen. */
  since: integer('since').notNull(),
  updatedAt: integer('updated_at').notNull(),
});
