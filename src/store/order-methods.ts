import { and, asc, count, eq, inArray, min, sql } from 'drizzle-orm';
import type { OrderStartResult, OrderStore, OrderWait } from '../core/delivery-store.js';
import { orderStatements } from './order-statements.js';
import { inChunks, type StoreBackend } from './store-backend.js';

/** Per-key order for ordered handlers, the same statements on every backend. */
export function orderMethods(backend: StoreBackend): OrderStore {
  const { db, tables, atomic } = backend;
  const { orderedRuns, orderKeys } = tables;
  const order = orderStatements(tables, backend.prepare);
  return {
    async startOrdered({ eventId, receivedAt, now, starts }) {
      if (starts.length === 0) return [];
      // Keys in one order, so two attempts that need the same keys lock them alike (PostgreSQL).
      const sorted = [...starts].sort((a, b) => (a.handler < b.handler ? -1 : a.handler > b.handler ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      // Not durable: a start lost in a crash lost its attempt too (its lease dies, and the lock with it).
      const results = await atomic((tx) => sorted.flatMap((e) => order.start(tx, { eventId, receivedAt, now }, e)), { durable: false });
      return sorted.map((e, i): OrderStartResult => {
        const [, , started, key, earlier] = results.slice(i * 5, i * 5 + 5) as [
          unknown,
          unknown,
          { newestAt: number | null; newestEventId: string | null }[],
          { runningEventId: string | null }[],
          { eventId: string }[],
        ];
        if (started.length > 0) {
          const { newestAt, newestEventId } = started[0]!;
          return { handler: e.handler, started: true, newest: newestAt !== null && newestEventId !== null ? { eventId: newestEventId, at: Number(newestAt) } : null };
        }
        const holder = key[0]?.runningEventId;
        return { handler: e.handler, started: false, waitingOn: holder && holder !== eventId ? holder : (earlier[0]?.eventId ?? null) };
      });
    },

    async orderWaits(eventIds) {
      const pending = await inChunks(eventIds, (ids) =>
        db
          .select()
          .from(orderedRuns)
          .where(and(inArray(orderedRuns.eventId, ids), eq(orderedRuns.state, 'pending'))),
      );
      const waits: OrderWait[] = [];
      for (const r of pending) {
        const [key] = await db
          .select({ runningEventId: orderKeys.runningEventId })
          .from(orderKeys)
          .where(and(eq(orderKeys.handler, r.handler), eq(orderKeys.orderKey, r.orderKey)));
        const [earlier] = await db
          .select({ eventId: orderedRuns.eventId })
          .from(orderedRuns)
          .where(
            and(
              eq(orderedRuns.handler, r.handler),
              eq(orderedRuns.orderKey, r.orderKey),
              eq(orderedRuns.state, 'pending'),
              sql`(${orderedRuns.at} < ${r.at} or (${orderedRuns.at} = ${r.at} and ${orderedRuns.eventId} < ${r.eventId}))`,
            ),
          )
          .orderBy(asc(orderedRuns.at), asc(orderedRuns.eventId))
          .limit(1);
        const holder = key?.runningEventId;
        const waitingOn = holder && holder !== r.eventId ? holder : (earlier?.eventId ?? null);
        // The first pending delivery of an idle key waits on nothing but its hold (or its retry).
        waits.push({ eventId: r.eventId, handler: r.handler, key: r.orderKey, waitingOn });
      }
      return waits;
    },

    async orderStats() {
      const rows = await db
        .select({ handler: orderedRuns.handler, waiting: count(), oldest: min(orderedRuns.receivedAt) })
        .from(orderedRuns)
        .where(eq(orderedRuns.state, 'pending'))
        .groupBy(orderedRuns.handler);
      return rows.map((r) => ({ handler: r.handler, waiting: Number(r.waiting), oldestReceivedAt: r.oldest === null ? null : Number(r.oldest) }));
    },
  };
}
