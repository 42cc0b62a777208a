import { and, desc, eq, gte, isNotNull, sql } from 'drizzle-orm';
import type { DeliveryStats, DeliveryStore, RequeueOptions } from '../../core/delivery-store.js';
import { toDeliveryStats } from '../delivery-admin.js';
import type { PostgresDatabase } from './postgres-store.js';
import * as schema from './schema.js';

const { deliveries, handlerRuns } = schema;
const HOUR_MS = 3_600_000;

/**
 * The admin API's store methods on PostgreSQL, the same queries as src/store/delivery-admin.ts
 * (counts come back as int8 text, hence the `Number`s). None is on the ingest or dispatch path.
 */
export function postgresAdminMethods(db: PostgresDatabase): Pick<DeliveryStore, 'requeue' | 'deliveryStats'> {
  return {
    async requeue({ owner, now, deliveries: requests }: RequeueOptions) {
      if (requests.length === 0) return 0;
      return db.transaction(async (tx) => {
        let requeued = 0;
        for (const r of requests) {
          for (const run of r.runs) {
            await tx
              .insert(handlerRuns)
              .values({ eventId: r.eventId, handler: run.handler, status: run.status, attempts: run.attempts, updatedAt: now })
              // The last error and duration stay on view until the handler runs again.
              .onConflictDoUpdate({
                target: [handlerRuns.eventId, handlerRuns.handler],
                set: { status: sql`excluded.status`, attempts: sql`excluded.attempts`, updatedAt: sql`excluded.updated_at` },
              });
          }
          const rows = await tx
            .update(deliveries)
            .set({ status: 'queued', nextAttemptAt: now, leaseOwner: null, leaseUntil: null, claimId: null })
            .where(and(eq(deliveries.eventId, r.eventId), eq(deliveries.leaseOwner, owner)))
            .returning({ eventId: deliveries.eventId });
          requeued += rows.length;
        }
        return requeued;
      });
    },

    async deliveryStats({ since, maxSamples }): Promise<DeliveryStats> {
      // int8 division truncates, as SQLite's integer division does.
      const hour = sql<number>`(${deliveries.receivedAt} / ${sql.raw(String(HOUR_MS))}) * ${sql.raw(String(HOUR_MS))}`;
      const hourly = await db
        .select({ hour, status: deliveries.status, count: sql<number>`count(*)` })
        .from(deliveries)
        .where(gte(deliveries.receivedAt, since))
        .groupBy(hour, deliveries.status);
      const ledger = await db
        .select({
          handler: handlerRuns.handler,
          runs: sql<number>`sum(${handlerRuns.attempts})`,
          failures: sql<number>`sum(${handlerRuns.failures})`,
        })
        .from(handlerRuns)
        .where(gte(handlerRuns.updatedAt, since))
        .groupBy(handlerRuns.handler);
      const noLedger = sql`not exists (select 1 from ${handlerRuns} where ${handlerRuns.eventId} = ${deliveries.eventId})`;
      const firstAttempt = await db
        .select({ eventType: deliveries.eventType, count: sql<number>`count(*)` })
        .from(deliveries)
        .where(and(gte(deliveries.receivedAt, since), eq(deliveries.status, 'processed'), noLedger))
        .groupBy(deliveries.eventType);
      const ledgerDurations = await db
        .select({ handler: handlerRuns.handler, eventType: deliveries.eventType, durationMs: handlerRuns.durationMs })
        .from(handlerRuns)
        .innerJoin(deliveries, eq(deliveries.eventId, handlerRuns.eventId))
        .where(and(gte(handlerRuns.updatedAt, since), isNotNull(handlerRuns.durationMs)))
        .orderBy(desc(handlerRuns.updatedAt))
        .limit(maxSamples);
      const firstDurations = await db
        .select({ eventType: deliveries.eventType, durationMs: deliveries.durationMs })
        .from(deliveries)
        .where(and(gte(deliveries.receivedAt, since), eq(deliveries.status, 'processed'), isNotNull(deliveries.durationMs), noLedger))
        .orderBy(desc(deliveries.receivedAt))
        .limit(maxSamples);
      const [dead] = await db
        .select({ count: sql<number>`count(*)` })
        .from(deliveries)
        .where(sql`${deliveries.status} in ('queued', 'failed', 'dead') and ${deliveries.status} = 'dead'`); // the partial index
      return toDeliveryStats({ hourly, ledger, firstAttempt, ledgerDurations, firstDurations, dead: dead?.count });
    },
  };
}
