import { and, eq, inArray, isNull, lt, or } from 'drizzle-orm';
import type { ClaimResult, ImportedDelivery, TransferStore } from '../core/delivery-store.js';
import { importedRow, importResult, toDelivery } from './row-mapping.js';
import { inChunks, type StoreBackend } from './store-backend.js';

/**
 * Moving deliveries in and out of the dispatcher's hands for `podhook import` and `replay`, and
 * giving leases back: the same statements on every backend.
 */
export function transferMethods({ db, tables, atomic }: StoreBackend): Pick<TransferStore, 'importDeliveries' | 'leaseEvents' | 'releaseLeases'> {
  const { deliveries } = tables;
  return {
    async importDeliveries(rows: readonly ImportedDelivery[]): Promise<ClaimResult[]> {
      if (rows.length === 0) return [];
      // Per row, in order inside one transaction: what is stored under the id, then the insert
      // (`ON CONFLICT DO NOTHING` covers the id and the content digest). A later row sees an
      // earlier row of the same call.
      const results = await atomic((tx) =>
        rows.flatMap((d) => [
          tx
            .select({ eventType: deliveries.eventType, deliveryCount: deliveries.deliveryCount })
            .from(deliveries)
            .where(eq(deliveries.eventId, d.eventId)),
          tx.insert(deliveries).values(importedRow(d)).onConflictDoNothing().returning({ eventId: deliveries.eventId }),
        ]),
      );
      return rows.map((d, i): ClaimResult =>
        importResult(d, (results[2 * i] as { eventType: string; deliveryCount: number }[])[0], results[2 * i + 1]!.length > 0),
      );
    },

    async leaseEvents({ eventIds, owner, claimId, now, leaseMs }) {
      const rows = await inChunks(eventIds.map((id) => id.toLowerCase()), (ids) =>
        db
          .update(deliveries)
          .set({ leaseOwner: owner, leaseUntil: now + leaseMs, claimId: claimId ?? owner })
          .where(and(inArray(deliveries.eventId, ids), or(isNull(deliveries.leaseUntil), lt(deliveries.leaseUntil, now))))
          .returning(),
      );
      return rows.map(toDelivery);
    },

    async releaseLeases(owner) {
      const rows = await db
        .update(deliveries)
        .set({ leaseOwner: null, leaseUntil: null, claimId: null })
        .where(eq(deliveries.leaseOwner, owner))
        .returning({ eventId: deliveries.eventId });
      return rows.length;
    },
  };
}
