import { and, asc, inArray, lt, sql } from 'drizzle-orm';
import { toDelivery } from '../row-mapping.js';
import type { StoreBackend } from '../store-backend.js';
import * as schema from './schema.js';
import { renewStatement, type AnySqliteDatabase } from './statements.js';
import type { StoreDriver } from './store-driver.js';

const PRUNABLE = ['processed', 'ignored'] as const;

/**
 * The SQLite dialect's backend, for both of its drivers (better-sqlite3 on Node, D1 on the
 * Worker): every query is awaited, which is a no-op on better-sqlite3 and required on D1. The
 * hot writes (claim, lease, outcome) go through the driver, which runs the same statements the
 * way that is fast on it.
 */
export function sqliteBackend(db: AnySqliteDatabase, driver: StoreDriver): StoreBackend {
  const { deliveries, handlerRuns, handlerAttempts, orderedRuns, handlerSteps } = schema;
  const atomic: StoreBackend['atomic'] = (build, options) => driver.atomic(build(db), options);
  return {
    db,
    tables: schema,
    atomic,
    prepare: driver.prepare,
    // SQLite compares text byte-wise (BINARY) unless told otherwise.
    byteOrder: (id) => sql`${id}`,
    claim: (batch) => driver.claim(batch),
    async leaseDue({ owner, claimId, now, leaseMs, limit }) {
      const rows = await driver.leaseDue({ owner, claimId: claimId ?? owner, now, leaseUntil: now + leaseMs, limit });
      return rows.map(toDelivery).sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0));
    },
    async renewLeases({ leases, until }) {
      const renewed = await atomic((tx) => leases.map((lease) => renewStatement(tx, lease, until)));
      return renewed.flatMap((rows) => (rows as { eventId: string }[]).map((r) => r.eventId));
    },
    completeDispatch: (outcomes) => driver.completeDispatch(outcomes),
    async prune({ before, limit }) {
      // The same ordered subquery picks the victims for every delete, inside one transaction.
      const [, , , , removed] = await atomic((tx) => {
        const victims = () =>
          tx
            .select({ id: deliveries.eventId })
            .from(deliveries)
            .where(and(lt(deliveries.receivedAt, before), inArray(deliveries.status, [...PRUNABLE])))
            .orderBy(asc(deliveries.receivedAt))
            .limit(limit);
        return [
          tx.delete(handlerRuns).where(inArray(handlerRuns.eventId, victims())).returning({ eventId: handlerRuns.eventId }),
          tx.delete(handlerAttempts).where(inArray(handlerAttempts.eventId, victims())).returning({ eventId: handlerAttempts.eventId }),
          tx.delete(orderedRuns).where(inArray(orderedRuns.eventId, victims())).returning({ eventId: orderedRuns.eventId }),
          tx.delete(handlerSteps).where(inArray(handlerSteps.eventId, victims())).returning({ eventId: handlerSteps.eventId }),
          tx.delete(deliveries).where(inArray(deliveries.eventId, victims())).returning({ eventId: deliveries.eventId }),
        ];
      });
      return removed!.length;
    },
    async ping() {
      await db.run(sql`select 1`);
    },
  };
}
