import { and, asc, desc, eq, gte, inArray, isNull, lt, lte, or, sql, type Placeholder } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type {
  ClaimResult,
  Delivery,
  DeliveryStore,
  HandlerRun,
  ListDeliveriesOptions,
  NewDelivery,
  StoredSecret,
} from '../core/delivery-store.js';
import * as schema from './schema.js';

const { deliveries, handlerRuns, webhookSecrets } = schema;

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

/** A statement with RETURNING, as both drivers run it in a transaction or batch. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ReturningQuery = { all(): any };

/** What differs between drivers: how claims and multi-statement writes run atomically. */
export interface StoreDriver {
  claim: ClaimExecutor;
  /** Runs statements (each with RETURNING) in one transaction; resolves with each one's rows. */
  atomic(queries: readonly ReturningQuery[]): Promise<unknown[][]>;
}

/** better-sqlite3: prepared claims, and synchronous transactions (an async callback would throw). */
export function createSyncDriver(db: AnySqliteDatabase & BaseSQLiteDatabase<'sync', unknown, typeof schema>): StoreDriver {
  return {
    claim: createSyncClaimExecutor(db),
    async atomic(queries) {
      return db.transaction(() => queries.map((q) => q.all() as unknown[]));
    },
  };
}

/** D1: no interactive transactions, so every multi-statement write is one atomic `batch`. */
export function createBatchDriver(db: AnySqliteDatabase & { batch: (q: never) => Promise<unknown[]> }): StoreDriver {
  return {
    claim: createBatchClaimExecutor(db),
    async atomic(queries) {
      if (queries.length === 0) return [];
      return (await db.batch(queries as never)) as unknown[][];
    },
  };
}

/** D1 refuses statements with more than 100 bound parameters. */
const MAX_IDS_PER_QUERY = 90;

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
export function createDrizzleStore(db: AnySqliteDatabase, { claim, atomic }: StoreDriver): DeliveryStore {
  const PRUNABLE = ['processed', 'ignored'] as const;
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

    async leaseDue({ owner, now, leaseMs, limit }) {
      const due = db
        .select({ id: deliveries.eventId })
        .from(deliveries)
        .where(
          and(
            inArray(deliveries.status, ['queued', 'failed']),
            lte(deliveries.nextAttemptAt, now),
            or(isNull(deliveries.leaseUntil), lt(deliveries.leaseUntil, now)),
          ),
        )
        .orderBy(asc(deliveries.nextAttemptAt))
        .limit(limit);
      const rows = await db
        .update(deliveries)
        .set({ leaseOwner: owner, leaseUntil: now + leaseMs })
        .where(inArray(deliveries.eventId, due))
        .returning();
      return rows.map(toDelivery).sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0));
    },

    async handlerRuns(eventIds) {
      const out: HandlerRun[] = [];
      for (let i = 0; i < eventIds.length; i += MAX_IDS_PER_QUERY) {
        const rows = await db
          .select()
          .from(handlerRuns)
          .where(inArray(handlerRuns.eventId, eventIds.slice(i, i + MAX_IDS_PER_QUERY)));
        for (const r of rows) {
          out.push({ eventId: r.eventId, handler: r.handler, status: r.status, attempts: r.attempts, lastError: r.lastError });
        }
      }
      return out;
    },

    async completeDispatch(outcomes) {
      const queries: ReturningQuery[] = [];
      for (const o of outcomes) {
        for (const run of o.runs) {
          queries.push(
            db
              .insert(handlerRuns)
              .values({ ...run, updatedAt: o.now })
              .onConflictDoUpdate({
                target: [handlerRuns.eventId, handlerRuns.handler],
                set: { status: run.status, attempts: run.attempts, lastError: run.lastError, updatedAt: o.now },
              })
              .returning({ eventId: handlerRuns.eventId }),
          );
        }
        queries.push(
          db
            .update(deliveries)
            .set({
              status: o.status,
              attempts: o.attempts,
              lastError: o.lastError,
              nextAttemptAt: o.nextAttemptAt,
              processedAt: o.status === 'processed' ? o.now : null,
              leaseOwner: null,
              leaseUntil: null,
            })
            .where(and(eq(deliveries.eventId, o.eventId), eq(deliveries.leaseOwner, o.owner)))
            .returning({ eventId: deliveries.eventId }),
        );
      }
      await atomic(queries);
    },

    async releaseLeases(owner) {
      const rows = await db
        .update(deliveries)
        .set({ leaseOwner: null, leaseUntil: null })
        .where(eq(deliveries.leaseOwner, owner))
        .returning({ eventId: deliveries.eventId });
      return rows.length;
    },

    async prune({ before, limit }) {
      // The same ordered subquery picks the victims for both deletes, inside one transaction.
      const victims = () =>
        db
          .select({ id: deliveries.eventId })
          .from(deliveries)
          .where(and(lt(deliveries.receivedAt, before), inArray(deliveries.status, [...PRUNABLE])))
          .orderBy(asc(deliveries.receivedAt))
          .limit(limit);
      const [, removed] = await atomic([
        db.delete(handlerRuns).where(inArray(handlerRuns.eventId, victims())).returning({ eventId: handlerRuns.eventId }),
        db.delete(deliveries).where(inArray(deliveries.eventId, victims())).returning({ eventId: deliveries.eventId }),
      ]);
      return removed!.length;
    },

    async queueStats() {
      const rows = await db
        .select({ status: deliveries.status, count: sql<number>`count(*)` })
        .from(deliveries)
        .where(inArray(deliveries.status, ['queued', 'failed', 'dead']))
        .groupBy(deliveries.status);
      const stats = { queued: 0, failed: 0, dead: 0 };
      for (const r of rows) stats[r.status as keyof typeof stats] = Number(r.count);
      return stats;
    },
  };
}
