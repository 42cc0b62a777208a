import { and, asc, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { Params } from '../params.js';
import type { ClaimResult } from '../../core/delivery.js';
import type { ClaimParams, HandlerRunParams, OutcomeParams } from '../row-mapping.js';
import type { QueryDatabase } from '../store-backend.js';
import * as schema from './schema.js';

const { deliveries, handlerRuns, handlerAttempts } = schema;

/** Any drizzle SQLite database over this schema: better-sqlite3 (sync) or D1 (async). */
export type AnySqliteDatabase = QueryDatabase;

/*
 * The hot statements, each defined once as a drizzle query over params (../params.ts): D1 builds
 * them with values and sends them in one `batch`; better-sqlite3 prepares them once with
 * placeholders and runs them in one transaction.
 */

/**
 * The two statements of one claim, run atomically:
 * - `insert`: a new event id; `ON CONFLICT DO NOTHING` covers both the id and the content digest;
 * - `bump`: the id is stored with the same type: count one more delivery (a duplicate).
 * Neither touched a row: the id is stored with another type, or the signed content is stored
 * under another id, which is a conflict (then `quarantineStatements`).
 */
export function claimStatements(db: AnySqliteDatabase, p: Params<ClaimParams>) {
  const bump = db
    .update(deliveries)
    .set({ deliveryCount: sql`${deliveries.deliveryCount} + 1`, lastReceivedAt: p.receivedAt as number })
    .where(and(eq(deliveries.eventId, p.eventId), eq(deliveries.eventType, p.eventType)))
    .returning({ deliveryCount: deliveries.deliveryCount });
  return { bump, insert: claimInsert(db, p).returning({ eventId: deliveries.eventId }) };
}

/** A claim's insert without `RETURNING`: better-sqlite3 reads whether it inserted from its changes. */
export function claimInsert(db: AnySqliteDatabase, p: Params<ClaimParams>) {
  return db
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
      leaseOwner: p.leaseOwner,
      leaseUntil: p.leaseUntil,
      claimId: p.claimId,
      traceParent: p.traceParent,
    })
    .onConflictDoNothing();
}

/** Extends one lease while its claim still holds the row (see `DeliveryStore.renewLeases`). */
export function renewStatement(db: AnySqliteDatabase, lease: { eventId: string; claimId: string }, until: number) {
  return db
    .update(deliveries)
    .set({ leaseUntil: until })
    .where(and(eq(deliveries.eventId, lease.eventId), eq(deliveries.claimId, lease.claimId)))
    .returning({ eventId: deliveries.eventId });
}

/** A bump means duplicate (D1 runs bump then insert; SQLite runs bump only when the insert did nothing). */
export function toClaimResult(inserted: readonly unknown[], bumped: readonly { deliveryCount: number }[]): ClaimResult {
  if (bumped.length > 0) return { outcome: 'duplicate', deliveryCount: bumped[0]!.deliveryCount };
  if (inserted.length > 0) return { outcome: 'new' };
  return { outcome: 'conflict' };
}

export interface LeaseParams {
  owner: string;
  claimId: string;
  now: number;
  leaseUntil: number;
  limit: number;
}

/** Leases due rows in one statement (the subquery runs under the write lock: no double lease). */
export function leaseStatement(db: AnySqliteDatabase, p: Params<LeaseParams>) {
  const due = db
    .select({ id: deliveries.eventId })
    .from(deliveries)
    .where(
      and(
        // Literal, not bound: SQLite uses the partial index deliveries_due_idx only when the
        // query's WHERE repeats the index's own condition.
        sql`${deliveries.status} in ('queued', 'failed')`,
        lte(deliveries.nextAttemptAt, p.now),
        or(isNull(deliveries.leaseUntil), lt(deliveries.leaseUntil, p.now)),
      ),
    )
    .orderBy(asc(deliveries.nextAttemptAt))
    .limit(p.limit as number);
  return db
    .update(deliveries)
    .set({ leaseOwner: p.owner as string, leaseUntil: p.leaseUntil as number, claimId: p.claimId as string })
    .where(inArray(deliveries.eventId, due))
    .returning();
}

/**
 * Writes one ledger run of an outcome, only while the outcome's claim still holds the delivery
 * (run before the outcome statement, which releases the claim): a stale claim writes no run.
 */
export function handlerRunStatement(db: AnySqliteDatabase, p: Params<HandlerRunParams>) {
  return db
    .insert(handlerRuns)
    .select((qb) =>
      qb
        .select({
          eventId: sql<string>`${p.eventId}`.as('event_id'),
          handler: sql<string>`${p.handler}`.as('handler'),
          status: sql<HandlerRunParams['status']>`${p.status}`.as('status'),
          attempts: sql<number>`${p.attempts}`.as('attempts'),
          lastError: sql<string | null>`${p.lastError}`.as('last_error'),
          updatedAt: sql<number>`${p.updatedAt}`.as('updated_at'),
          durationMs: sql<number | null>`${p.durationMs}`.as('duration_ms'),
          failures: sql<number>`(${p.status} = 'failed')`.as('failures'),
        })
        .from(deliveries)
        .where(and(eq(deliveries.eventId, p.eventId), eq(deliveries.claimId, p.claimId))),
    )
    .onConflictDoUpdate({
      target: [handlerRuns.eventId, handlerRuns.handler],
      set: {
        status: sql`excluded.status`,
        attempts: sql`excluded.attempts`,
        lastError: sql`excluded.last_error`,
        updatedAt: sql`excluded.updated_at`,
        durationMs: sql`excluded.duration_ms`,
        failures: sql`${handlerRuns.failures} + excluded.failures`,
      },
    })
    .returning({ eventId: handlerRuns.eventId });
}

/**
 * Writes one handler run into the run history, only while the outcome's claim still holds the
 * delivery (run before the outcome statement, as `handlerRunStatement`). A run already recorded
 * (the same handler and attempt) is kept as it was.
 */
export function attemptStatement(db: AnySqliteDatabase, p: Params<HandlerRunParams>) {
  return db
    .insert(handlerAttempts)
    .select((qb) =>
      qb
        .select({
          eventId: sql<string>`${p.eventId}`.as('event_id'),
          handler: sql<string>`${p.handler}`.as('handler'),
          attempt: sql<number>`${p.attempts}`.as('attempt'),
          outcome: sql<HandlerRunParams['outcome']>`${p.outcome}`.as('outcome'),
          error: sql<string | null>`${p.lastError}`.as('error'),
          durationMs: sql<number | null>`${p.durationMs}`.as('duration_ms'),
          finishedAt: sql<number>`${p.updatedAt}`.as('finished_at'),
          ranBy: sql<string>`${p.ranBy}`.as('ran_by'),
        })
        .from(deliveries)
        .where(and(eq(deliveries.eventId, p.eventId), eq(deliveries.claimId, p.claimId))),
    )
    .onConflictDoNothing()
    .returning({ eventId: handlerAttempts.eventId });
}

/** Records an outcome and releases the lease, only while its claim still holds it. */
export function outcomeStatement(db: AnySqliteDatabase, p: Params<OutcomeParams>) {
  return outcomeUpdate(db, p).returning({ eventId: deliveries.eventId });
}

/** The outcome's update without `RETURNING`: better-sqlite3 reads whether it was recorded from its changes. */
export function outcomeUpdate(db: AnySqliteDatabase, p: Params<OutcomeParams>) {
  return db
    .update(deliveries)
    .set({
      status: p.status as OutcomeParams['status'],
      attempts: p.attempts as number,
      lastError: p.lastError as string | null,
      nextAttemptAt: p.nextAttemptAt as number | null,
      processedAt: p.processedAt as number | null,
      durationMs: p.durationMs as number | null,
      ranBy: p.ranBy as string,
      leaseOwner: null,
      leaseUntil: null,
      claimId: null,
    })
    .where(and(eq(deliveries.eventId, p.eventId), eq(deliveries.claimId, p.claimId)));
}
