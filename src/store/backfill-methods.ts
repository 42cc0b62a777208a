import { and, asc, count, desc, eq, getTableColumns, gt, isNull, lt, or, sql } from 'drizzle-orm';
import type { Backfill, BackfillStore } from '../core/backfill/backfill-store.js';
import { backfillStepStatements, coveredBy, deadLettersIn, handledBy } from './backfill-statements.js';
import { toDelivery } from './row-mapping.js';
import type { StoreBackend, Tables } from './store-backend.js';

/** Handlers per registration statement: three parameters each, under D1's 100. */
const REGISTRATIONS_PER_STATEMENT = 30;

type BackfillRow = Tables['backfills']['$inferSelect'];

function toBackfill(r: BackfillRow): Backfill {
  const n = (v: number | null) => (v === null ? null : Number(v));
  return {
    id: r.id,
    handler: r.handler,
    since: n(r.since),
    until: n(r.until),
    eventType: r.eventType,
    rate: n(r.rate),
    state: r.state,
    cursor: r.cursorReceivedAt !== null && r.cursorEventId !== null ? { receivedAt: Number(r.cursorReceivedAt), eventId: r.cursorEventId } : null,
    step: Number(r.step),
    total: Number(r.total),
    requeued: Number(r.requeued),
    skipped: Number(r.skipped),
    recent: r.recent ? (JSON.parse(r.recent) as [number, number][]) : [],
    createdAt: Number(r.createdAt),
    updatedAt: Number(r.updatedAt),
    finishedAt: n(r.finishedAt),
    error: r.error,
    lease: r.leaseOwner !== null && r.claimId !== null && r.leaseUntil !== null ? { owner: r.leaseOwner, claimId: r.claimId, until: Number(r.leaseUntil) } : null,
  };
}

/** Backfills and handler registrations: the same statements on every backend, none on the ingest path. */
export function backfillMethods(backend: StoreBackend): BackfillStore {
  const { db, tables, atomic, byteOrder } = backend;
  const { deliveries, handlerRegistrations: reg, backfills } = tables;
  const noLease = { leaseOwner: null, claimId: null, leaseUntil: null };

  return {
    async registerHandlers(handlers, now) {
      for (let i = 0; i < handlers.length; i += REGISTRATIONS_PER_STATEMENT) {
        await db
          .insert(reg)
          .values(handlers.slice(i, i + REGISTRATIONS_PER_STATEMENT).map((handler) => ({ handler, firstSeenAt: now, lastSeenAt: now })))
          .onConflictDoUpdate({
            target: reg.handler,
            set: {
              // The earliest start wins, whichever replica writes last.
              firstSeenAt: sql`case when ${reg.firstSeenAt} <= excluded.first_seen_at then ${reg.firstSeenAt} else excluded.first_seen_at end`,
              lastSeenAt: sql`case when ${reg.lastSeenAt} >= excluded.last_seen_at then ${reg.lastSeenAt} else excluded.last_seen_at end`,
            },
          });
      }
    },

    async handlerRegistrations() {
      const rows = await db.select().from(reg).orderBy(asc(reg.handler));
      return rows.map((r) => ({ handler: r.handler, firstSeenAt: Number(r.firstSeenAt), lastSeenAt: Number(r.lastSeenAt) }));
    },

    async countBackfill(selection) {
      if (selection.types.length === 0) return { matching: 0, handled: 0, deadLetters: 0 };
      const covered = coveredBy(tables, selection);
      const [[matching], [handled], [dead]] = await Promise.all([
        db.select({ n: count() }).from(deliveries).where(covered),
        db.select({ n: count() }).from(deliveries).where(and(covered, handledBy(tables, selection))),
        db.select({ n: count() }).from(deliveries).where(deadLettersIn(tables, selection)),
      ]);
      return { matching: Number(matching?.n ?? 0), handled: Number(handled?.n ?? 0), deadLetters: Number(dead?.n ?? 0) };
    },

    async backfillPage(selection, after, limit) {
      if (selection.types.length === 0) return [];
      const id = byteOrder(deliveries.eventId);
      const rows = await db
        .select({ ...getTableColumns(deliveries), handled: sql<number>`case when ${handledBy(tables, selection)} then 1 else 0 end` })
        .from(deliveries)
        .where(
          and(
            coveredBy(tables, selection),
            after ? or(gt(deliveries.receivedAt, after.receivedAt), and(eq(deliveries.receivedAt, after.receivedAt), gt(id, after.eventId))) : undefined,
          ),
        )
        .orderBy(asc(deliveries.receivedAt), asc(id))
        .limit(limit);
      return rows.map(({ handled, ...row }) => ({ delivery: toDelivery(row), handled: Number(handled) === 1 }));
    },

    async createBackfill(b) {
      const rows = await db
        .insert(backfills)
        .values({ ...b, state: 'running', updatedAt: b.createdAt })
        // The partial unique index: one running backfill per handler.
        .onConflictDoNothing()
        .returning({ id: backfills.id });
      return rows.length > 0;
    },

    async getBackfill(id) {
      const [row] = await db.select().from(backfills).where(eq(backfills.id, id)).limit(1);
      return row ? toBackfill(row) : null;
    },

    async listBackfills({ limit = 50, state } = {}) {
      const rows = await db
        .select()
        .from(backfills)
        .where(state ? eq(backfills.state, state) : undefined)
        .orderBy(desc(backfills.createdAt), desc(backfills.id))
        .limit(limit);
      return rows.map(toBackfill);
    },

    async claimBackfill({ id, owner, claimId, now, leaseMs }) {
      const [row] = await db
        .update(backfills)
        .set({ leaseOwner: owner, claimId, leaseUntil: now + leaseMs, updatedAt: now })
        .where(
          and(
            eq(backfills.id, id),
            eq(backfills.state, 'running'),
            // Free, or already this owner's (an earlier claim of its own that it lost track of: a
            // step that threw after the claim must not stall the backfill for a whole lease).
            or(eq(backfills.claimId, claimId), eq(backfills.leaseOwner, owner), isNull(backfills.leaseUntil), lt(backfills.leaseUntil, now)),
          ),
        )
        .returning();
      return row ? toBackfill(row) : null;
    },

    async renewBackfill({ id, claimId, until }) {
      const rows = await db
        .update(backfills)
        .set({ leaseUntil: until })
        .where(and(eq(backfills.id, id), eq(backfills.claimId, claimId), eq(backfills.state, 'running')))
        .returning({ id: backfills.id });
      return rows.length > 0;
    },

    async resolveBackfill({ id, claimId, until, total, now }) {
      const rows = await db
        .update(backfills)
        .set({ until, total, updatedAt: now })
        .where(and(eq(backfills.id, id), eq(backfills.claimId, claimId), eq(backfills.state, 'running'), isNull(backfills.until)))
        .returning({ id: backfills.id });
      return rows.length > 0;
    },

    async requeueForBackfill(step) {
      // No sync of its own (better-sqlite3): lost in a crash, the page is lost with its advance, and
      // requeued again; the next durable commit (an ingest claim) makes it durable.
      const results = await atomic((tx) => backfillStepStatements(tx, tables, step), { durable: false });
      const before = (results[0] as { requeued: number }[])[0];
      const after = (results.at(-1) as { requeued: number }[])[0];
      if (!before || !after) return { advanced: false, requeued: 0 };
      return { advanced: true, requeued: Number(after.requeued) - Number(before.requeued) };
    },

    async finishBackfill({ id, claimId, now, state, error }) {
      const rows = await db
        .update(backfills)
        .set({
          state,
          finishedAt: now,
          updatedAt: now,
          error: error ?? null,
          ...noLease,
          // Done: the total is what it passed (deliveries whose status changed meanwhile come and go).
          ...(state === 'done' ? { total: sql`${backfills.requeued} + ${backfills.skipped}` } : {}),
        })
        .where(and(eq(backfills.id, id), eq(backfills.claimId, claimId), eq(backfills.state, 'running')))
        .returning({ id: backfills.id });
      return rows.length > 0;
    },

    async cancelBackfill(id, now) {
      const [row] = await db
        .update(backfills)
        .set({ state: 'cancelled', finishedAt: now, updatedAt: now, ...noLease })
        .where(and(eq(backfills.id, id), eq(backfills.state, 'running')))
        .returning();
      return row ? toBackfill(row) : null;
    },
  };
}
