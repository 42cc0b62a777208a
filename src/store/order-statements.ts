import { and, asc, eq, gte, lt, ne, or, sql, type SQL } from 'drizzle-orm';
import type { DispatchOutcome, NewDelivery, OrderEntry, OrderFinish } from '../core/delivery-store.js';
import type { Param, Params } from './params.js';
import type { Prepare, QueryDatabase, ReturningQuery, StatementSet, Tables } from './store-backend.js';

/**
 * The statements of ordered handlers, the same SQL on every backend (each driver runs them its
 * own way: better-sqlite3 prepared once and inside its group commit, D1 in its batch, PostgreSQL
 * in a transaction). None runs for a deployment without ordered handlers.
 */

type Tx = QueryDatabase;

/** One ordered handler's row of one delivery: its key and place. */
interface Place {
  eventId: string;
  handler: string;
  key: string;
  at: number;
}

export interface OrderEntryParams extends Place {
  eventType: string;
  receivedAt: number;
}

/** A row of `ordered_runs` for one delivery, made only if that delivery is stored under this type (a conflict is not). */
function orderEntryStatement(tx: Tx, { orderedRuns, deliveries }: Tables, p: Params<OrderEntryParams>): ReturningQuery[] {
  return [
    tx
      .insert(orderedRuns)
      .select((qb) =>
        qb
          .select({
            handler: sql<string>`${p.handler}`.as('handler'),
            orderKey: sql<string>`${p.key}`.as('order_key'),
            eventId: deliveries.eventId,
            at: sql<number>`${p.at}`.as('at'),
            receivedAt: deliveries.receivedAt,
            state: sql<'pending'>`'pending'`.as('state'),
          })
          .from(deliveries)
          .where(and(eq(deliveries.eventId, p.eventId), eq(deliveries.eventType, p.eventType))),
      )
      .onConflictDoNothing()
      .returning({ eventId: orderedRuns.eventId }),
  ];
}

/** Pending rows of this key that come before (at, event id): what a delivery must wait for. */
function earlierPending({ orderedRuns }: Tables, p: Params<Place>): SQL {
  return and(
    eq(orderedRuns.handler, p.handler),
    eq(orderedRuns.orderKey, p.key),
    eq(orderedRuns.state, 'pending'),
    ne(orderedRuns.eventId, p.eventId),
    or(lt(orderedRuns.at, p.at), and(eq(orderedRuns.at, p.at), lt(orderedRuns.eventId, p.eventId))),
  )!;
}

/** The key's holder still runs: its delivery's lease lives. */
function holderAlive({ orderKeys, deliveries }: Tables, now: Param<number>): SQL {
  return sql`exists (select 1 from ${deliveries} where ${deliveries.eventId} = ${orderKeys.runningEventId} and ${gte(deliveries.leaseUntil, now)})`;
}

export interface OrderStartParams extends Place {
  receivedAt: number;
  now: number;
}

/**
 * The statements that ask whether one ordered handler of a delivery may run now, in order:
 * the delivery's row (made if missing), the key's row (made if missing), the try (the key's lock:
 * free, or already this delivery's, or held by a delivery whose lease ran out; and no earlier
 * pending row), then what it waits on: the key's holder, the earliest pending row before it.
 */
function orderStartStatements(tx: Tx, t: Tables, p: Params<OrderStartParams>): ReturningQuery[] {
  const { orderedRuns, orderKeys } = t;
  const key = and(eq(orderKeys.handler, p.handler), eq(orderKeys.orderKey, p.key));
  return [
    tx
      .insert(orderedRuns)
      .values({ handler: p.handler, orderKey: p.key, eventId: p.eventId, at: p.at, receivedAt: p.receivedAt })
      .onConflictDoNothing()
      .returning({ eventId: orderedRuns.eventId }),
    tx.insert(orderKeys).values({ handler: p.handler, orderKey: p.key }).onConflictDoNothing().returning({ handler: orderKeys.handler }),
    tx
      .update(orderKeys)
      .set({ runningEventId: sql`${p.eventId}` })
      .where(
        and(
          key,
          sql`(${orderKeys.runningEventId} is null or ${orderKeys.runningEventId} = ${p.eventId} or not ${holderAlive(t, p.now)})`,
          sql`not exists (select 1 from ${orderedRuns} where ${earlierPending(t, p)})`,
        ),
      )
      .returning({ newestAt: orderKeys.newestAt, newestEventId: orderKeys.newestEventId }),
    tx.select({ runningEventId: orderKeys.runningEventId }).from(orderKeys).where(key),
    tx
      .select({ eventId: orderedRuns.eventId })
      .from(orderedRuns)
      .where(earlierPending(t, p))
      .orderBy(asc(orderedRuns.at), asc(orderedRuns.eventId))
      .limit(1),
  ];
}

export interface OrderFinishParams extends Place {
  claimId: string;
  now: number;
  /** The row's state: done, skipped or dead (unused when the handler released its place). */
  state: 'done' | 'skipped' | 'dead';
  /** 1 when it ran: its `at` may become the key's newest. */
  ran: number;
  holdMs: number;
}

/**
 * What an outcome writes for one ordered handler, before the outcome itself and fenced by its
 * claim (a replica that lost the delivery settles nothing): the row's state (unless it was
 * `released`: it keeps its place for the retry), the key's lock given back (and its newest event
 * moved on when this one ran), and the key's next pending delivery made due (from now, not before
 * its receipt + the hold) when it only waits on order.
 */
function orderFinishStatements(tx: Tx, t: Tables, p: Params<OrderFinishParams>, released: boolean): ReturningQuery[] {
  const { orderedRuns, orderKeys, deliveries } = t;
  const held = sql`exists (select 1 from ${deliveries} where ${deliveries.eventId} = ${p.eventId} and ${deliveries.claimId} = ${p.claimId})`;
  const newer = sql`(${p.ran} = 1 and (${orderKeys.newestAt} is null or ${orderKeys.newestAt} < ${p.at}))`;
  const giveBack = tx
    .update(orderKeys)
    .set({
      runningEventId: null,
      newestAt: sql`case when ${newer} then ${p.at} else ${orderKeys.newestAt} end`,
      newestEventId: sql`case when ${newer} then cast(${p.eventId} as text) else ${orderKeys.newestEventId} end`,
    })
    .where(and(eq(orderKeys.handler, p.handler), eq(orderKeys.orderKey, p.key), eq(orderKeys.runningEventId, p.eventId), held))
    .returning({ handler: orderKeys.handler });
  if (released) return [giveBack];
  const next = tx
    .select({ eventId: orderedRuns.eventId })
    .from(orderedRuns)
    .where(and(eq(orderedRuns.handler, p.handler), eq(orderedRuns.orderKey, p.key), eq(orderedRuns.state, 'pending'), ne(orderedRuns.eventId, p.eventId)))
    .orderBy(asc(orderedRuns.at), asc(orderedRuns.eventId))
    .limit(1);
  const due = sql`case when ${deliveries.receivedAt} + ${p.holdMs} > ${p.now} then ${deliveries.receivedAt} + ${p.holdMs} else ${p.now} end`;
  return [
    tx
      .update(orderedRuns)
      .set({ state: sql`${p.state}` })
      .where(and(eq(orderedRuns.handler, p.handler), eq(orderedRuns.orderKey, p.key), eq(orderedRuns.eventId, p.eventId), held))
      .returning({ eventId: orderedRuns.eventId }),
    giveBack,
    tx
      .update(deliveries)
      .set({ nextAttemptAt: due })
      .where(and(sql`${deliveries.eventId} = (${next})`, eq(deliveries.status, 'queued'), sql`${deliveries.nextAttemptAt} > ${due}`, held))
      .returning({ eventId: deliveries.eventId }),
  ];
}

/**
 * After the outcome of an attempt whose ordered handlers waited: the delivery is due at once if
 * none of them waits any more (the key's holder finished, or the earlier one, while the attempt
 * ran: its wake found this delivery still leased and was overwritten by this outcome).
 */
function orderRecheckStatement(tx: Tx, t: Tables, o: { eventId: string; now: number }, waiting: readonly OrderFinish[]): ReturningQuery {
  const { orderedRuns, orderKeys, deliveries } = t;
  const stillWaits = waiting.map(
    (e) =>
      sql`(exists (select 1 from ${orderedRuns} where ${earlierPending(t, { ...e, eventId: o.eventId })}) or exists (select 1 from ${orderKeys} where ${and(
        eq(orderKeys.handler, e.handler),
        eq(orderKeys.orderKey, e.key),
        ne(orderKeys.runningEventId, o.eventId),
      )} and ${holderAlive(t, o.now)}) or ${deliveries.receivedAt} + ${e.holdMs} > ${o.now})`,
  );
  return tx
    .update(deliveries)
    .set({ nextAttemptAt: o.now })
    .where(and(eq(deliveries.eventId, o.eventId), eq(deliveries.status, 'queued'), sql`${deliveries.nextAttemptAt} > ${o.now}`, sql`not (${sql.join(stillWaits, sql` or `)})`))
    .returning({ eventId: deliveries.eventId });
}

const place = (o: { eventId: string }, e: OrderEntry): Place => ({ eventId: o.eventId, handler: e.handler, key: e.key, at: e.at });

/**
 * The order statements of one backend, defined once and made ready by its `prepare` (better-
 * sqlite3 prepares them on first use; D1 and PostgreSQL build them with each call's values):
 * - `entries`: the rows of a delivery just stored (with its claim);
 * - `start`: the try of one ordered handler (see orderStartStatements);
 * - `settling`: what an outcome writes `before` it (fenced by the claim) and `after` it (the
 *   recheck of a waiting delivery, built each time: its shape depends on how many waited).
 */
export function orderStatements(t: Tables, prepare: Prepare) {
  const entry = prepare<OrderEntryParams>(['eventId', 'eventType', 'receivedAt', 'handler', 'key', 'at'], (tx, p) => orderEntryStatement(tx, t, p));
  const start = prepare<OrderStartParams>(['eventId', 'receivedAt', 'now', 'handler', 'key', 'at'], (tx, p) => orderStartStatements(tx, t, p));
  const finishKeys = ['eventId', 'claimId', 'now', 'handler', 'key', 'at', 'state', 'ran', 'holdMs'] as const;
  const finish = prepare<OrderFinishParams>(finishKeys, (tx, p) => orderFinishStatements(tx, t, p, false));
  const release = prepare<OrderFinishParams>(finishKeys, (tx, p) => orderFinishStatements(tx, t, p, true));
  return {
    entries: (tx: Tx, d: NewDelivery): ReturningQuery[] =>
      (d.order ?? []).flatMap((e) => entry(tx, { ...place(d, e), eventType: d.eventType, receivedAt: d.receivedAt })),
    start: (tx: Tx, d: { eventId: string; receivedAt: number; now: number }, e: OrderEntry) => start(tx, { ...place(d, e), receivedAt: d.receivedAt, now: d.now }),
    settling(o: DispatchOutcome & { now: number }) {
      const finishes = o.order ?? [];
      const waiting = finishes.filter((f) => f.state === 'waiting');
      const claimId = o.claimId ?? o.owner;
      return {
        before: (tx: Tx) =>
          finishes.flatMap((f) =>
            f.state === 'waiting'
              ? []
              : (f.state === 'released' ? release : finish)(tx, {
                  ...place(o, f),
                  claimId,
                  now: o.now,
                  state: f.state === 'released' ? 'done' : f.state,
                  ran: f.state === 'done' ? 1 : 0,
                  holdMs: f.holdMs,
                }),
          ),
        after: (tx: Tx) => (waiting.length > 0 ? [orderRecheckStatement(tx, t, o, waiting)] : []),
      };
    },
  };
}

export type OrderStatements = ReturnType<typeof orderStatements>;
