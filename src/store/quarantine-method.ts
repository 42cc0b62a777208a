import { and, eq, isNull, sql } from 'drizzle-orm';
import type { IngestStore } from '../core/delivery-store.js';
import { claimParams, QUARANTINED_ERROR, toQuarantineResult } from './row-mapping.js';
import type { StoreBackend } from './store-backend.js';

/**
 * Stores a conflicting delivery as `quarantined`, the same statements on every backend, run
 * atomically in this order (a D1 batch cannot branch):
 * - `stored`: the delivery it conflicts with (the id, or the signed content under another id);
 * - `bump`: a copy already quarantined under the alternate id counts one more delivery;
 * - `insert`: a new quarantined row, under the sent id when it is free, else the alternate id.
 * Off the hot path: only a conflict gets here.
 */
export function quarantineMethod({ tables: { deliveries }, atomic }: StoreBackend): Pick<IngestStore, 'quarantine'> {
  return {
    async quarantine(delivery, alternateId) {
      const p = claimParams(delivery);
      const byId = sql`(select ${deliveries.eventId} from ${deliveries} where ${eq(deliveries.eventId, p.eventId)})`;
      const sameContent = and(eq(deliveries.signatureT, p.signatureT), eq(deliveries.contentDigest, p.contentDigest), isNull(deliveries.conflictWith));
      const byContent = sql`(select ${deliveries.eventId} from ${deliveries} where ${sameContent})`;
      const [stored, bumped, inserted] = await atomic((tx) => [
        tx
          .select({ eventId: deliveries.eventId, eventType: deliveries.eventType })
          .from(deliveries)
          .where(sql`${deliveries.eventId} = coalesce(${byId}, ${byContent})`),
        tx
          .update(deliveries)
          .set({ deliveryCount: sql`${deliveries.deliveryCount} + 1`, lastReceivedAt: p.receivedAt })
          .where(and(eq(deliveries.eventId, alternateId), eq(deliveries.eventType, p.eventType)))
          .returning({ deliveryCount: deliveries.deliveryCount }),
        tx
          .insert(deliveries)
          .values({
            ...p,
            // Cast: PostgreSQL types a parameter by its use, and a CASE gives it none.
            eventId: sql`case when exists ${byId} then cast(${alternateId} as text) else cast(${p.eventId} as text) end`,
            lastReceivedAt: p.receivedAt,
            status: 'quarantined',
            lastError: QUARANTINED_ERROR,
            nextAttemptAt: null,
            leaseOwner: null,
            leaseUntil: null,
            conflictWith: sql`coalesce(${byId}, ${byContent})`,
          })
          .onConflictDoNothing()
          .returning({ eventId: deliveries.eventId }),
      ]);
      return toQuarantineResult(stored as never, bumped as never, inserted as never);
    },
  };
}
