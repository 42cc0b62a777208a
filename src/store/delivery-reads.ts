import { and, asc, desc, eq, gt, inArray, lt, or, sql } from 'drizzle-orm';
import type { HandlerAttempt, HandlerRun, ListDeliveriesOptions, ReadStore, ScanDeliveriesOptions } from '../core/delivery-store.js';
import { deliveryFilters, toDelivery } from './row-mapping.js';
import { inChunks, type StoreBackend } from './store-backend.js';

/** Reading deliveries and their ledger, the same queries on every backend. */
export function deliveryReads({ db, tables, byteOrder }: StoreBackend): Omit<ReadStore, 'deliveryStats'> {
  const { deliveries, handlerRuns, handlerAttempts } = tables;
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

    async scan({ status, eventType, since, drift, before, after, limit, order = 'asc' }: ScanDeliveriesOptions) {
      // Newest first pages backwards: strictly before `after`, in descending key order.
      const [beyond, by] = order === 'asc' ? [gt, asc] : [lt, desc];
      const id = byteOrder(deliveries.eventId);
      const rows = await db
        .select()
        .from(deliveries)
        .where(
          deliveryFilters(
            deliveries,
            { status, eventType, since, drift },
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
      const rows = await inChunks(eventIds, (ids) => db.select().from(handlerRuns).where(inArray(handlerRuns.eventId, ids)));
      return rows.map(({ eventId, handler, status, attempts, lastError, durationMs, updatedAt }): HandlerRun => ({
        eventId, handler, status, attempts, lastError, durationMs, at: updatedAt,
      }));
    },

    async handlerAttempts(eventIds) {
      const rows = await inChunks(eventIds, (ids) => db.select().from(handlerAttempts).where(inArray(handlerAttempts.eventId, ids)));
      // Oldest first; one attempt's runs finish at one time, so by handler within it.
      return rows
        .map(({ finishedAt, ...run }): HandlerAttempt => ({ ...run, at: finishedAt }))
        .sort((a, b) => a.at - b.at || (a.handler < b.handler ? -1 : a.handler > b.handler ? 1 : a.attempt - b.attempt));
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
