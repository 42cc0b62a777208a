import { sql } from 'drizzle-orm';
import { bigint, customType, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';

/** Raw bytes as `bytea`: node-postgres returns a Buffer, handed on as a plain Uint8Array like the SQLite store's. */
const bytes = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  toDriver: (value) => (Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)),
  fromDriver: (value) => new Uint8Array(value.buffer, value.byteOffset, value.byteLength),
});

/** Epoch milliseconds: past 2^31, so `bigint`, read as a JS number. */
const millis = (name: string) => bigint(name, { mode: 'number' });

/**
 * The PostgreSQL mirror of src/store/schema.ts (same tables, columns, names and partial
 * indexes). A column or index added
 * there is added here too, then `npm run db:generate:postgres`.
 */
export const deliveries = pgTable(
  'deliveries',
  {
    eventId: text('event_id').primaryKey(),
    eventType: text('event_type').notNull(),
    signatureT: bigint('signature_t', { mode: 'number' }).notNull(),
    contentDigest: bytes('content_digest').notNull(),
    body: bytes('body').notNull(),
    headers: text('headers').notNull(),
    receivedAt: millis('received_at').notNull(),
    lastReceivedAt: millis('last_received_at').notNull(),
    deliveryCount: integer('delivery_count').notNull().default(1),
    status: text('status', { enum: ['queued', 'processed', 'failed', 'dead', 'ignored', 'quarantined'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    nextAttemptAt: millis('next_attempt_at'),
    leaseOwner: text('lease_owner'),
    leaseUntil: millis('lease_until'),
    /** The claim holding the lease: its renewals and outcome match it (a fencing token). */
    claimId: text('claim_id'),
    processedAt: millis('processed_at'),
    durationMs: integer('duration_ms'),
    conflictWith: text('conflict_with'),
  },
  (t) => [
    uniqueIndex('deliveries_signed_content_uq').on(t.signatureT, t.contentDigest).where(sql`${t.conflictWith} is null`),
    index('deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.status} in ('queued', 'failed')`),
    index('deliveries_open_status_idx').on(t.status).where(sql`${t.status} in ('queued', 'failed', 'dead')`),
    index('deliveries_received_idx').on(t.receivedAt),
  ],
);

export const handlerRuns = pgTable(
  'handler_runs',
  {
    eventId: text('event_id').notNull(),
    handler: text('handler').notNull(),
    status: text('status', { enum: ['succeeded', 'failed', 'queued'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    updatedAt: millis('updated_at').notNull(),
    durationMs: integer('duration_ms'),
    failures: integer('failures').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.eventId, t.handler] })],
);

export const webhookSecrets = pgTable('webhook_secrets', {
  id: text('id').primaryKey(),
  webhookId: text('webhook_id'),
  url: text('url'),
  eventTypes: text('event_types'),
  secret: text('secret').notNull(),
  fingerprint: text('fingerprint').notNull().unique(),
  createdAt: millis('created_at').notNull(),
});

export const heartbeats = pgTable('heartbeats', {
  name: text('name').primaryKey(),
  beatAt: millis('beat_at').notNull(),
  downFrom: millis('down_from'),
  downUntil: millis('down_until'),
});

export const listenCursors = pgTable('listen_cursors', {
  remote: text('remote').primaryKey(),
  cursor: text('cursor'),
  since: millis('since').notNull(),
  updatedAt: millis('updated_at').notNull(),
});
