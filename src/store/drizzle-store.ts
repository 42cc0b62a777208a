import { and, asc, desc, eq, gte, or, sql, type Placeholder } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type { ClaimResult, Delivery, DeliveryStore, ListDeliveriesOptions, NewDelivery, StoredSecret } from '../core/delivery-store.js';
import * as schema from './schema.js';

const { deliveries, webhookSecrets } = schema;

/** Any drizzle SQLite database over this schema: better-sqlite3 (sync) or D1 (async). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnySqliteDatabase = BaseSQLiteDatabase<'sync' | 'async', any, typeof schema>;

/**
 * How a driver runs claims atomically. better-sqlite3 runs prepared statements inside one
 * synchronous transaction; D1 has no interactive transactions, so it sends one atomic `batch`.
 * Both use the same statements, built by `claimStatements`.
 */
export type ClaimExecutor = (batch: readonly NewDelivery[]) => Promise<ClaimResult[]>;

type Param<T> = T | Placeholder;
interface ClaimParams {
  eventId: Param<string>;
  eventType: Param<string>;
  signatureT: Param<number>;
  contentDigest: Param<Uint8Array>;
  body: Param<Uint8Array>;
  headers: Param<string>;
  receivedAt: Param<number>;
  status: Param<NewDelivery['status']>;
  lastError: Param<string | null>;
  nextAttemptAt: Param<number | null>;
}

/**
 * The two statements of one claim, in order, inside one transaction:
 * 1. the id is stored with the same type: count one more delivery (a duplicate);
 * 2. otherwise insert it; `ON CONFLICT DO NOTHING` covers both the id and the content digest.
 * Neither touched a row: the id is stored with another type, or the signed content is stored
 * under another id, which is a replay (409).
 */
function claimStatements(db: AnySqliteDatabase, p: ClaimParams) {
  const bump = db
    .update(deliveries)
    .set({ deliveryCount: sql`${deliveries.deliveryCount} + 1`, lastReceivedAt: p.receivedAt as number })
    .where(and(eq(deliveries.eventId, p.eventId), eq(deliveries.eventType, p.eventType)))
    .returning({ deliveryCount: deliveries.deliveryCount });
  const insert = db
    .insert(deliveries)
    .values({
      eventId: p.eventId,
      eventType: p.eventType,
      signatureT: p.signatureT,
      contentDigest: p.contentDigest,
      body: p.body,
      headers: p.headers,
      receivedAt: p.receivedAt,
      lastReceivedAt: p.receivedAt,
      status: p.status,
      lastError: p.lastError,
      nextAttemptAt: p.nextAttemptAt,
    })
    .onConflictDoNothing()
    .returning({ eventId: deliveries.eventId });
  return { bump, insert };
}

function claimValues(d: NewDelivery): ClaimParams {
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
  };
}

function toClaimResult(bumped: { deliveryCount: number }[], inserted: unknown[]): ClaimResult {
  if (bumped.length > 0) return { outcome: 'duplicate', deliveryCount: bumped[0]!.deliveryCount };
  if (inserted.length > 0) return { outcome: 'new' };
  return { outcome: 'conflict' };
}

/** Claims for a synchronous driver (better-sqlite3): statements prepared once, one transaction per batch. */
export function createSyncClaimExecutor(db: AnySqliteDatabase & BaseSQLiteDatabase<'sync', unknown, typeof schema>): ClaimExecutor {
  const ph = <K extends keyof ClaimParams>(k: K) => sql.placeholder(k);
  const { bump, insert } = claimStatements(db, {
    eventId: ph('eventId'),
    eventType: ph('eventType'),
    signatureT: ph('signatureT'),
    contentDigest: ph('contentDigest'),
    body: ph('body'),
    headers: ph('headers'),
    receivedAt: ph('receivedAt'),
    status: ph('status'),
    lastError: ph('lastError'),
    nextAttemptAt: ph('nextAttemptAt'),
  });
  const bumpStmt = bump.prepare();
  const insertStmt = insert.prepare();
  const run = (batch: readonly NewDelivery[]) =>
    db.transaction(() =>
      batch.map((d) => {
        const values = claimValues(d) as unknown as Record<string, unknown>;
        const bumped = bumpStmt.all(values) as { deliveryCount: number }[];
        return toClaimResult(bumped, bumped.length > 0 ? [] : (insertStmt.all(values) as unknown[]));
      }),
    );
  return async (batch) => run(batch);
}

/** Claims for D1: the same statements sent as one atomic batch (D1 has no interactive transactions). */
export function createBatchClaimExecutor(db: AnySqliteDatabase & { batch: (q: never) => Promise<unknown[]> }): ClaimExecutor {
  return async (batch) => {
    if (batch.length === 0) return [];
    const queries = batch.flatMap((d) => {
      const { bump, insert } = claimStatements(db, claimValues(d));
      return [bump, insert];
    });
    const results = (await db.batch(queries as never)) as unknown[][];
    return batch.map((_, i) => toClaimResult(results[2 * i] as { deliveryCount: number }[], results[2 * i + 1]!));
  };
}

export interface DrizzleStoreOptions {
  claim: ClaimExecutor;
}

type DeliveryRow = typeof deliveries.$inferSelect;

function toDelivery(row: DeliveryRow): Delivery {
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
  };
}

/**
 * The one store implementation, typed over both SQLite drivers: every query is awaited, which
 * is a no-op on better-sqlite3 and required on D1. Only the claim's atomic execution differs.
 */
export function createDrizzleStore(db: AnySqliteDatabase, { claim }: DrizzleStoreOptions): DeliveryStore {
  return {
    claim,
    async get(eventId) {
      const rows = await db.select().from(deliveries).where(eq(deliveries.eventId, eventId.toLowerCase())).limit(1);
      return rows[0] ? toDelivery(rows[0]) : null;
    },
    async list({ status, eventType, since, limit = 100 }: ListDeliveriesOptions = {}) {
      const where = and(
        status ? eq(deliveries.status, status) : undefined,
        eventType ? eq(deliveries.eventType, eventType) : undefined,
        since !== undefined ? gte(deliveries.receivedAt, since) : undefined,
      );
      const rows = await db
        .select()
        .from(deliveries)
        .where(where)
        .orderBy(desc(deliveries.receivedAt), desc(deliveries.eventId))
        .limit(limit);
      return rows.map(toDelivery);
    },
    async listSecrets() {
      const rows = await db.select().from(webhookSecrets).orderBy(asc(webhookSecrets.createdAt), asc(webhookSecrets.id));
      return rows.map(
        (r): StoredSecret => ({
          id: r.id,
          webhookId: r.webhookId,
          url: r.url,
          eventTypes: r.eventTypes ? (JSON.parse(r.eventTypes) as string[]) : null,
          secret: r.secret,
          fingerprint: r.fingerprint,
          createdAt: r.createdAt,
        }),
      );
    },
    async addSecret(secret) {
      const inserted = await db
        .insert(webhookSecrets)
        .values({
          id: secret.id,
          webhookId: secret.webhookId,
          url: secret.url,
          eventTypes: secret.eventTypes ? JSON.stringify(secret.eventTypes) : null,
          secret: secret.secret,
          fingerprint: secret.fingerprint,
          createdAt: secret.createdAt,
        })
        .onConflictDoNothing()
        .returning({ id: webhookSecrets.id });
      return inserted.length > 0;
    },
    async removeSecret(idOrFingerprint) {
      const removed = await db
        .delete(webhookSecrets)
        .where(or(eq(webhookSecrets.id, idOrFingerprint), eq(webhookSecrets.fingerprint, idOrFingerprint)))
        .returning({ id: webhookSecrets.id });
      return removed.length;
    },
    async ping() {
      await db.run(sql`select 1`);
    },
  };
}
