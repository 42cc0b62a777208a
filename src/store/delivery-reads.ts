import { and, asc, desc, eq, gt, inArray, lt, or, sql } from 'drizzle-orm';
import type { DeliveryStore, HandlerRun, ListDeliveriesOptions, ScanDeliveriesOptions } from '../core/delivery-store.js';
import { deliveryFilters, toDelivery } from './row-mapping.js';
import { MAX_IDS_PER_QUERY, type StoreBackend } from './store-backend.js';

/** Reading deliveries and their ledger, the same queries on every backend. */
export function deliveryReads({ db, tables, byteOrder }: StoreBackend): Pick<DeliveryStore, 'get' | 'list' | 'scan' | 'handlerRuns' | 'queueStats'> {
  const { deliveries, handlerRuns } = tables;
  return {
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

    async scan({ status, eventType, since, before, after, limit, order = 'asc' }: ScanDeliveriesOptions) {
      // Newest first pages backwards: strictly before `after`, in descending key order.
      const [beyond, by] = order === 'asc' ? [gt, asc] : [lt, desc];
      const id = byteOrder(deliveries.eventId);
      const rows = await db
        .select()
        .from(deliveries)
        .where(
          deliveryFilters(
            deliveries,
            { status, eventType, since },
            before !== undefined ? lt(deliveries.receivedAt, before) : undefined,
            after
              ? or(beyond(deliveries.receivedAt, after.receivedAt), and(eq(deliveries.receivedAt, after.receivedAt), beyond(id, after.eventId)))
              : undefined,
          ),
        )
        .orderBy(by(deliveries.receivedAt), by(id))
        .limit(limit);
      return rows.map(toDelivery);
    },

    async handlerRuns(eventIds) {
      const out: HandlerRun[] = [];
      for (let i = 0; i < eventIds.length; i += MAX_IDS_PER_QUERY) {
        const rows = await db
          .select()
          .from(handlerRuns)
          .where(inArray(handlerRuns.eventId, eventIds.slice(i, i + MAX_IDS_PER_QUERY)));
        for (const { eventId, handler, status, attempts, lastError, durationMs, updatedAt } of rows) {
          out.push({ eventId, handler, status, attempts, lastError, durationMs, at: updatedAt });
        }
      }
      return out;
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
  };
}
