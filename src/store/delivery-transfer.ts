import { and, asc, desc, eq, gt, inArray, isNull, lt, or } from 'drizzle-orm';
import type { ClaimResult, DeliveryStore, ImportedDelivery, ScanDeliveriesOptions } from '../core/delivery-store.js';
import * as schema from './schema.js';
import { deliveryFilters, importedRow, importResult } from './row-values.js';
import { MAX_IDS_PER_QUERY, toDelivery, type AnySqliteDatabase } from './statements.js';
import type { StoreDriver } from './store-driver.js';

const { deliveries } = schema;


/**
 * The store methods that move deliveries in and out for `podhook export`, `import` and `replay`:
 * keyset paging, import as exported, and leasing chosen rows. Same drizzle queries on both drivers.
 */
export function deliveryTransferMethods(
  db: AnySqliteDatabase,
  { atomic }: Pick<StoreDriver, 'atomic'>,
): Pick<DeliveryStore, 'scan' | 'importDeliveries' | 'leaseEvents'> {
  return {
    async scan({ status, eventType, since, before, after, limit, order = 'asc' }: ScanDeliveriesOptions) {
      // Newest first pages backwards: strictly before `after`, in descending key order.
      const [beyond, by] = order === 'asc' ? [gt, asc] : [lt, desc];
      const rows = await db
        .select()
        .from(deliveries)
        .where(
          deliveryFilters(
            deliveries,
            { status, eventType, since },
            before !== undefined ? lt(deliveries.receivedAt, before) : undefined,
            after
              ? or(
                  beyond(deliveries.receivedAt, after.receivedAt),
                  and(eq(deliveries.receivedAt, after.receivedAt), beyond(deliveries.eventId, after.eventId)),
                )
              : undefined,
          ),
        )
        .orderBy(by(deliveries.receivedAt), by(deliveries.eventId))
        .limit(limit);
      return rows.map(toDelivery);
    },

    async importDeliveries(rows: readonly ImportedDelivery[]): Promise<ClaimResult[]> {
      // Per row, in order inside one transaction: what is stored under the id, then the insert
      // (`ON CONFLICT DO NOTHING` covers the id and the content digest). A later row sees an
      // earlier row of the same call.
      const results = await atomic(
        rows.flatMap((d) => [
          db
            .select({ eventType: deliveries.eventType, deliveryCount: deliveries.deliveryCount })
            .from(deliveries)
            .where(eq(deliveries.eventId, d.eventId)),
          db
            .insert(deliveries)
            .values(importedRow(d))
            .onConflictDoNothing()
            .returning({ eventId: deliveries.eventId }),
        ]),
      );
      return rows.map((d, i): ClaimResult =>
        importResult(d, (results[2 * i] as { eventType: string; deliveryCount: number }[])[0], results[2 * i + 1]!.length > 0),
      );
    },

    async leaseEvents({ eventIds, owner, claimId, now, leaseMs }) {
      const leased = [];
      for (let i = 0; i < eventIds.length; i += MAX_IDS_PER_QUERY) {
        const ids = eventIds.slice(i, i + MAX_IDS_PER_QUERY).map((id) => id.toLowerCase());
        const rows = await db
          .update(deliveries)
          .set({ leaseOwner: owner, leaseUntil: now + leaseMs, claimId: claimId ?? owner })
          .where(and(inArray(deliveries.eventId, ids), or(isNull(deliveries.leaseUntil), lt(deliveries.leaseUntil, now))))
          .returning();
        leased.push(...rows.map(toDelivery));
      }
      return leased;
    },
  };
}
