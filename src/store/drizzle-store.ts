import { and, asc, desc, eq, inArray, lt, sql } from 'drizzle-orm';
import type {
  DeliveryStore,
  HandlerRun,
  ListDeliveriesOptions,
} from '../core/delivery-store.js';
import * as schema from './schema.js';
import {
  claimParams,
  claimStatements,
  handlerRunStatement,
  leaseStatement,
  outcomeParams,
  outcomeStatement,
  quarantineStatements,
  renewStatement,
  toClaimResult,
  toQuarantineResult,
  toDelivery,
  MAX_IDS_PER_QUERY,
  type AnySqliteDatabase,
  type DeliveryRow,
} from './statements.js';
import type { ReturningQuery, StoreDriver } from './store-driver.js';
import { deliveryTransferMethods } from './delivery-transfer.js';
import { heartbeatMethods } from './heartbeat-methods.js';
import { deliveryFilters, fromSecretRow, secretMatch, secretRow } from './row-values.js';
import { deliveryAdminMethods } from './delivery-admin.js';
import { listenCursorMethods } from './listen-cursor-methods.js';

const { deliveries, handlerRuns, webhookSecrets } = schema;

export type { AnySqliteDatabase } from './statements.js';
export type { StoreDriver, ReturningQuery } from './store-driver.js';
export { createSyncDriver, type SyncDriverOptions } from './sync-driver.js';

/** D1: no interactive transactions, so every multi-statement write is one atomic `batch`. */
export function createBatchDriver(db: AnySqliteDatabase & { batch: (q: never) => Promise<unknown[]> }): StoreDriver {
  const batch = async (queries: readonly ReturningQuery[]) =>
    queries.length === 0 ? [] : ((await db.batch(queries as never)) as unknown[][]);
  return {
    async claim(deliveries) {
      // Bump first, then insert: a batch cannot branch, and the bump must not see the new row.
      const results = await batch(
        deliveries.flatMap((d) => {
          const { bump, insert } = claimStatements(db, claimParams(d));
          return [bump, insert];
        }),
      );
      return deliveries.map((_, i) => toClaimResult(results[2 * i + 1]!, results[2 * i] as { deliveryCount: number }[]));
    },
    async leaseDue(params) {
      return (await leaseStatement(db, params)) as DeliveryRow[];
    },
    async completeDispatch(outcomes) {
      await batch(
        outcomes.flatMap((o) => {
          const { outcome, runs } = outcomeParams(o);
          return [...runs.map((r) => handlerRunStatement(db, r)), outcomeStatement(db, outcome)];
        }),
      );
    },
    atomic: batch,
  };
}


/**
 * The one store implementation, typed over both SQLite drivers: every query is awaited, which
 * is a no-op on better-sqlite3 and required on D1. The hot writes (claim, lease, outcome) go
 * through the driver, which runs the same statements the way that is fast on it.
 */
export function createDrizzleStore(db: AnySqliteDatabase, driver: StoreDriver): DeliveryStore {
  const PRUNABLE = ['processed', 'ignored'] as const;
  const { atomic } = driver;
  return {
    claim: (batch) => driver.claim(batch),
    async quarantine(delivery, alternateId) {
      const { stored, bump, insert } = quarantineStatements(db, delivery, alternateId);
      const [found, bumped, inserted] = await atomic([stored, bump, insert]);
      return toQuarantineResult(found as never, bumped as never, inserted as never);
    },
    async get(eventId) {
      const rows = await db.select().from(deliveries).where(eq(deliveries.eventId, eventId.toLowerCase())).limit(1);
      return rows[0] ? toDelivery(rows[0]) : null;
    },
    async list({ limit = 100, ...filters }: ListDeliveriesOptions = {}) {
      const rows = await db
        .select()
        .from(deliveries)
        .where(deliveryFilters(deliveries, filters))
        .orderBy(desc(deliveries.receivedAt), desc(deliveries.eventId))
        .limit(limit);
      return rows.map(toDelivery);
    },
    async listSecrets() {
      const rows = await db.select().from(webhookSecrets).orderBy(asc(webhookSecrets.createdAt), asc(webhookSecrets.id));
      return rows.map(fromSecretRow);
    },
    async addSecret(secret) {
      const inserted = await db
        .insert(webhookSecrets)
        .values(secretRow(secret))
        .onConflictDoNothing()
        .returning({ id: webhookSecrets.id });
      return inserted.length > 0;
    },
    async removeSecret(idOrFingerprint) {
      const removed = await db
        .delete(webhookSecrets)
        .where(secretMatch(webhookSecrets, idOrFingerprint))
        .returning({ id: webhookSecrets.id });
      return removed.length;
    },
    async ping() {
      await db.run(sql`select 1`);
    },

    async leaseDue({ owner, claimId, now, leaseMs, limit }) {
      const rows = await driver.leaseDue({ owner, claimId: claimId ?? owner, now, leaseUntil: now + leaseMs, limit });
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
          out.push({
            eventId: r.eventId,
            handler: r.handler,
            status: r.status,
            attempts: r.attempts,
            lastError: r.lastError,
            durationMs: r.durationMs,
            at: r.updatedAt,
          });
        }
      }
      return out;
    },

    completeDispatch: (outcomes) => driver.completeDispatch(outcomes),

    async renewLeases({ leases, until }) {
      const renewed = await atomic(leases.map((lease) => renewStatement(db, lease, until)));
      return renewed.flatMap((rows) => (rows as { eventId: string }[]).map((r) => r.eventId));
    },

    async releaseLeases(owner) {
      const rows = await db
        .update(deliveries)
        .set({ leaseOwner: null, leaseUntil: null, claimId: null })
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
        .where(sql`${deliveries.status} in ('queued', 'failed', 'dead')`) // the partial index's condition
        .groupBy(deliveries.status);
      const stats = { queued: 0, failed: 0, dead: 0 };
      for (const r of rows) stats[r.status as keyof typeof stats] = Number(r.count);
      return stats;
    },

    ...deliveryTransferMethods(db, driver),
    ...heartbeatMethods(db),
    ...deliveryAdminMethods(db, driver),
    ...listenCursorMethods(db),
  };
}
