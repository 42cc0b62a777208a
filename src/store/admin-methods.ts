import { and, desc, eq, gte, isNotNull, sql } from 'drizzle-orm';
import type { DeliveryStats, ReadStore, RequeueOptions, TransferStore } from '../core/delivery-store.js';
import type { DeliveryStatus } from '../core/delivery.js';
import type { StoreBackend } from './store-backend.js';

const HOUR_MS = 3_600_000;

/**
 * The store methods of the admin API and inspector: requeue for a replay by the dispatcher, and
 * the counts behind the stats and chart. The same queries on every backend (counts may come back
 * as int8 text on PostgreSQL, hence `toDeliveryStats`); none of them is on the ingest or dispatch path.
 */
export function adminMethods({ db, tables, atomic }: StoreBackend): Pick<TransferStore, 'requeue'> & Pick<ReadStore, 'deliveryStats'> {
  const { deliveries, handlerRuns, handlerAttempts } = tables;
  return {
    async requeue({ owner, now, deliveries: requests }: RequeueOptions) {
      if (requests.length === 0) return 0;
      const results = await atomic((tx) =>
        requests.flatMap((r) => [
          // Earlier runs that left no row (a success at the first attempt), kept in the history before the new ones.
          ...(r.history ?? []).map((h) =>
            tx
              .insert(handlerAttempts)
              .values({ eventId: h.eventId, handler: h.handler, attempt: h.attempt, outcome: h.outcome, error: h.error, durationMs: h.durationMs, finishedAt: h.at, ranBy: h.ranBy })
              .onConflictDoNothing()
              .returning({ eventId: handlerAttempts.eventId }),
          ),
          ...r.runs.map((run) =>
            tx
              .insert(handlerRuns)
              .values({ eventId: r.eventId, handler: run.handler, status: run.status, attempts: run.attempts, updatedAt: now })
              // The last error and duration stay on view until the handler runs again.
              .onConflictDoUpdate({
                target: [handlerRuns.eventId, handlerRuns.handler],
                set: { status: sql`excluded.status`, attempts: sql`excluded.attempts`, updatedAt: sql`excluded.updated_at` },
              })
              .returning({ eventId: handlerRuns.eventId }),
          ),
          tx
            .update(deliveries)
            .set({ status: 'queued', nextAttemptAt: now, leaseOwner: null, leaseUntil: null, claimId: null })
            .where(and(eq(deliveries.eventId, r.eventId), eq(deliveries.leaseOwner, owner)))
            .returning({ eventId: deliveries.eventId }),
        ]),
      );
      let requeued = 0;
      let i = 0;
      for (const r of requests) {
        i += (r.history?.length ?? 0) + r.runs.length;
        requeued += results[i++]!.length;
      }
      return requeued;
    },

    async deliveryStats({ since, maxSamples }): Promise<DeliveryStats> {
      // Inlined: better-sqlite3 binds numbers as REAL, which would make this division fractional;
      // integer division truncates in both dialects.
      const hour = sql<number>`(${deliveries.receivedAt} / ${sql.raw(String(HOUR_MS))}) * ${sql.raw(String(HOUR_MS))}`;
      const hourly = await db
        .select({ hour, status: deliveries.status, count: sql<number>`count(*)` })
        .from(deliveries)
        .where(gte(deliveries.receivedAt, since))
        .groupBy(hour, deliveries.status);
      // A row holds one handler's runs of one delivery and how many of them failed.
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

type Count = number | string;

/** The stats' rows as the queries give them (counts may come back as int8 text) in the interface's shape. */
export function toDeliveryStats(rows: {
  hourly: readonly { hour: Count; status: string; count: Count }[];
  ledger: readonly { handler: string; runs: Count; failures: Count }[];
  firstAttempt: readonly { eventType: string; count: Count }[];
  ledgerDurations: readonly { handler: string; eventType: string; durationMs: number | null }[];
  firstDurations: readonly { eventType: string; durationMs: number | null }[];
  dead: Count | undefined;
}): DeliveryStats {
  return {
    hourly: rows.hourly.map((r) => ({ hour: Number(r.hour), status: r.status as DeliveryStatus, count: Number(r.count) })),
    ledger: rows.ledger.map((r) => ({ handler: r.handler, runs: Number(r.runs), failures: Number(r.failures) })),
    firstAttempt: rows.firstAttempt.map((r) => ({ eventType: r.eventType, count: Number(r.count) })),
    durations: [
      ...rows.ledgerDurations.map((r) => ({ handler: r.handler, eventType: r.eventType, durationMs: r.durationMs! })),
      ...rows.firstDurations.map((r) => ({ handler: null, eventType: r.eventType, durationMs: r.durationMs! })),
    ],
    dead: Number(rows.dead ?? 0),
  };
}
