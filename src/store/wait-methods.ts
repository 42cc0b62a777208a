import { and, asc, count, eq, exists, gt, inArray, isNotNull, isNull, ne, or, sql } from 'drizzle-orm';
import type { EventWaitStore, WaitRow } from '../core/waits/wait-store.js';
import { inChunks, type StoreBackend } from './store-backend.js';

type WaitDbRow = StoreBackend['tables']['eventWaits']['$inferSelect'];

/** Waits woken per statement: three bound values each, under D1's 100 with the rest. */
const WAKE_CHUNK = 25;

const toWait = (r: WaitDbRow): WaitRow => ({
  eventId: r.eventId,
  handler: r.handler,
  seq: Number(r.seq),
  name: r.name,
  podId: r.podId,
  types: r.types.split(','),
  afterAt: Number(r.afterAt),
  untilAt: Number(r.untilAt),
  createdAt: Number(r.createdAt),
  wokenBy: r.wokenBy,
});

/** `ctx.waitForEvent`'s waits, the same statements on every backend. */
export function waitMethods({ db, tables, atomic, byteOrder, prepare }: StoreBackend): EventWaitStore {
  const { eventWaits: w, deliveries: d } = tables;
  // A wait whose delivery is no longer open (it went dead beside another handler's failure, or a
  // deploy took the wait out of its handler) waits for nothing: it is neither counted nor woken.
  const open = (tx: typeof db) => exists(tx.select({ one: sql`1` }).from(d).where(and(eq(d.eventId, w.eventId), inArray(d.status, ['queued', 'failed']))));
  // The check of each new delivery while a run waits: prepared once on better-sqlite3.
  const onPod = prepare<{ podId: string }>(['podId'], (tx, p) => [tx.select().from(w).where(and(eq(w.podId, p.podId), open(tx)))]);
  const any = prepare<Record<string, never>>([], (tx) => [tx.select({ eventId: w.eventId }).from(w).where(open(tx)).limit(1)]);
  /** A read, outside any transaction: a query built with values is awaited, a prepared one run. */
  const read = async <R>([query]: ReturnType<typeof onPod>): Promise<R[]> => ('then' in query! ? query : query!.all()) as Promise<R[]>;
  /** A delivery that is waiting (queued, or failed beside a waiting handler), not leased, due later than `now`. */
  const dueLater = (now: number) => and(inArray(d.status, ['queued', 'failed']), isNull(d.leaseOwner), gt(d.nextAttemptAt, now));
  /** One chunk's wake: `wokenBy` recorded where none is yet, the waiting deliveries due now where parked. */
  async function wake(waits: readonly Pick<WaitRow, 'eventId' | 'handler' | 'seq'>[], wokenBy: string, now: number): Promise<string[]> {
    const ids = [...new Set(waits.map((x) => x.eventId))];
    const [, due] = await atomic((tx) => [
      tx
        .update(w)
        .set({ wokenBy: sql`coalesce(${w.wokenBy}, ${wokenBy})` })
        .where(or(...waits.map((x) => and(eq(w.eventId, x.eventId), eq(w.handler, x.handler), eq(w.seq, x.seq)))))
        .returning({ eventId: w.eventId }),
      tx
        .update(d)
        .set({ nextAttemptAt: now })
        .where(and(inArray(d.eventId, ids), dueLater(now)))
        .returning({ eventId: d.eventId }),
    ]);
    return (due as { eventId: string }[]).map((r) => r.eventId);
  }
  return {
    async putWait(wait, claimId) {
      const [rows] = await atomic((tx) => [
        tx
          .insert(w)
          .select((qb) =>
            qb
              .select({
                eventId: sql<string>`${wait.eventId}`.as('event_id'),
                handler: sql<string>`${wait.handler}`.as('handler'),
                seq: sql<number>`${wait.seq}`.as('seq'),
                name: sql<string>`${wait.name}`.as('name'),
                podId: sql<string>`${wait.podId}`.as('pod_id'),
                types: sql<string>`${wait.types.join(',')}`.as('types'),
                afterAt: sql<number>`${wait.afterAt}`.as('after_at'),
                untilAt: sql<number>`${wait.untilAt}`.as('until_at'),
                createdAt: sql<number>`${wait.createdAt}`.as('created_at'),
                wokenBy: sql<string | null>`${null}`.as('woken_by'),
              })
              .from(d)
              .where(and(eq(d.eventId, wait.eventId), eq(d.claimId, claimId))),
          )
          // The same wait again (a woken run looking once more): what woke it is consumed by this look.
          .onConflictDoUpdate({
            target: [w.eventId, w.handler, w.seq],
            set: { name: sql`excluded.name`, podId: sql`excluded.pod_id`, types: sql`excluded.types`, afterAt: sql`excluded.after_at`, untilAt: sql`excluded.until_at`, wokenBy: sql`null` },
          })
          .returning({ createdAt: w.createdAt }),
      ]);
      const row = (rows as { createdAt: number }[])[0];
      return { recorded: row !== undefined, created: row !== undefined && Number(row.createdAt) === wait.createdAt };
    },

    async dropWait(eventId, handler, seq) {
      await db.delete(w).where(and(eq(w.eventId, eventId), eq(w.handler, handler), eq(w.seq, seq)));
    },

    async deliveriesAfter({ types, afterAt, from, limit }) {
      const id = byteOrder(d.eventId);
      return (
        await db
          .select({ eventId: d.eventId, eventType: d.eventType, signatureT: d.signatureT, receivedAt: d.receivedAt, body: d.body, traceParent: d.traceParent })
          .from(d)
          .where(
            and(
              inArray(d.eventType, [...types]),
              gt(d.receivedAt, afterAt),
              ne(d.status, 'quarantined'),
              from ? or(gt(d.receivedAt, from.receivedAt), and(eq(d.receivedAt, from.receivedAt), gt(id, from.eventId))) : undefined,
            ),
          )
          .orderBy(asc(d.receivedAt), asc(id))
          .limit(limit)
      ).map((r) => ({ ...r, signatureT: Number(r.signatureT), receivedAt: Number(r.receivedAt) }));
    },

    async countWaits() {
      const [row] = await db.select({ n: count() }).from(w).where(open(db));
      return Number(row?.n ?? 0);
    },

    async anyWaits() {
      return (await read(any(db, {}))).length > 0;
    },

    async waitsOnPod(podId) {
      return (await read<WaitDbRow>(onPod(db, { podId }))).map(toWait);
    },

    async wakeWaits(all, wokenBy, now) {
      const woken: string[] = [];
      // A wait is three bound values: in chunks that stay under D1's 100 per statement.
      for (let i = 0; i < all.length; i += WAKE_CHUNK) woken.push(...(await wake(all.slice(i, i + WAKE_CHUNK), wokenBy, now)));
      return woken;
    },

    async wakeIfWoken(eventId, now) {
      const rows = await db
        .update(d)
        .set({ nextAttemptAt: now })
        .where(and(eq(d.eventId, eventId), dueLater(now), exists(db.select({ one: sql`1` }).from(w).where(and(eq(w.eventId, eventId), isNotNull(w.wokenBy))))))
        .returning({ eventId: d.eventId });
      return rows.length > 0;
    },

    async waitsOf(eventIds) {
      const rows = await inChunks(eventIds, (ids) => db.select().from(w).where(inArray(w.eventId, ids)).orderBy(asc(w.eventId), asc(w.handler), asc(w.seq)));
      return rows.map(toWait);
    },
  };
}
