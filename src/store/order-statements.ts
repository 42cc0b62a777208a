import { and, asc, eq, gte, lt, ne, or, sql, type SQL } from 'drizzle-orm';
import type { OrderEntry, OrderFinish } from '../core/delivery-store.js';
import type { QueryDatabase, ReturningQuery, Tables } from './store-backend.js';

/**
 * The statements of ordered handlers, the same SQL on every backend (each driver runs them its
 * own way: better-sqlite3 inside its group commit, D1 in its batch, PostgreSQL in a transaction).
 * None runs for a deployment without ordered handlers.
 */

type Tx = QueryDatabase;

/** A row of `ordered_runs` for one delivery, made only if that delivery is stored under this type (a conflict is not). */
export function orderEntryStatement(tx: Tx, { orderedRuns, deliveries }: Tables, d: { eventId: string; eventType: string; receivedAt: number }, e: OrderEntry): ReturningQuery {
  return tx
    .insert(orderedRuns)
    .select((qb) =>
      qb
        .select({
          handler: sql<string>`${e.handler}`.as('handler'),
          orderKey: sql<string>`${e.key}`.as('order_key'),
          eventId: deliveries.eventId,
          at: sql<number>`${e.at}`.as('at'),
          receivedAt: deliveries.receivedAt,
          state: sql<'pending'>`'pending'`.as('state'),
        })
        .from(deliveries)
        .where(and(eq(deliveries.eventId, d.eventId), eq(deliveries.eventType, d.eventType))),
    )
    .onConflictDoNothing()
    .returning({ eventId: orderedRuns.eventId });
}

/** Pending rows of this key that come before (at, event id): what a delivery must wait for. */
function earlierPending({ orderedRuns }: Tables, eventId: string, e: OrderEntry): SQL {
  return and(
    eq(orderedRuns.handler, e.handler),
    eq(orderedRuns.orderKey, e.key),
    eq(orderedRuns.state, 'pending'),
    ne(orderedRuns.eventId, eventId),
    or(lt(orderedRuns.at, e.at), and(eq(orderedRuns.at, e.at), lt(orderedRuns.eventId, eventId))),
  )!;
}

/** The key's holder still runs: its delivery's lease lives. */
function holderAlive({ orderKeys, deliveries }: Tables, now: number): SQL {
  return sql`exists (select 1 from ${deliveries} where ${deliveries.eventId} = ${orderKeys.runningEventId} and ${gte(deliveries.leaseUntil, now)})`;
}

/**
 * The statements that ask whether one ordered handler of a delivery may run now, in order:
 * the delivery's row (made if missing), the key's row (made if missing), the try (the key's lock:
 * free, or already this delivery's, or held by a delivery whose lease ran out; and no earlier
 * pending row), then what it waits on: the key's holder, the earliest pending row before it.
 */
export function orderStartStatements(tx: Tx, t: Tables, d: { eventId: string; receivedAt: number; now: number }, e: OrderEntry): ReturningQuery[] {
  const { orderedRuns, orderKeys } = t;
  const key = and(eq(orderKeys.handler, e.handler), eq(orderKeys.orderKey, e.key));
  return [
    tx
      .insert(orderedRuns)
      .values({ handler: e.handler, orderKey: e.key, eventId: d.eventId, at: e.at, receivedAt: d.receivedAt })
      .onConflictDoNothing()
      .returning({ eventId: orderedRuns.eventId }),
    tx.insert(orderKeys).values({ handler: e.handler, orderKey: e.key }).onConflictDoNothing().returning({ handler: orderKeys.handler }),
    tx
      .update(orderKeys)
      .set({ runningEventId: d.eventId })
      .where(
        and(
          key,
          sql`(${orderKeys.runningEventId} is null or ${orderKeys.runningEventId} = ${d.eventId} or not ${holderAlive(t, d.now)})`,
          sql`not exists (select 1 from ${orderedRuns} where ${earlierPending(t, d.eventId, e)})`,
        ),
      )
      .returning({ newestAt: orderKeys.newestAt, newestEventId: orderKeys.newestEventId }),
    tx.select({ runningEventId: orderKeys.runningEventId }).from(orderKeys).where(key),
    tx
      .select({ eventId: orderedRuns.eventId })
      .from(orderedRuns)
      .where(earlierPending(t, d.eventId, e))
      .orderBy(asc(orderedRuns.at), asc(orderedRuns.eventId))
      .limit(1),
  ];
}

/**
 * What an outcome writes for one ordered handler, before the outcome itself and fenced by its
 * claim (a replica that lost the delivery settles nothing): the row's state, the key's lock given
 * back (and its newest event moved on when this one ran), and the key's next pending delivery
 * made due (from now, not before its receipt + the hold) when it only waits on order.
 */
export function orderFinishStatements(tx: Tx, t: Tables, o: { eventId: string; claimId: string; now: number }, f: OrderFinish): ReturningQuery[] {
  const { orderedRuns, orderKeys, deliveries } = t;
  const held = sql`exists (select 1 from ${deliveries} where ${deliveries.eventId} = ${o.eventId} and ${deliveries.claimId} = ${o.claimId})`;
  const statements: ReturningQuery[] = [];
  if (f.state === 'waiting') return statements;
  if (f.state !== 'released') {
    statements.push(
      tx
        .update(orderedRuns)
        .set({ state: f.state })
        .where(and(eq(orderedRuns.handler, f.handler), eq(orderedRuns.orderKey, f.key), eq(orderedRuns.eventId, o.eventId), held))
        .returning({ eventId: orderedRuns.eventId }),
    );
  }
  const newer = sql`(${f.state === 'done' ? 1 : 0} = 1 and (${orderKeys.newestAt} is null or ${orderKeys.newestAt} < ${f.at}))`;
  statements.push(
    tx
      .update(orderKeys)
      .set({
        runningEventId: null,
        newestAt: sql`case when ${newer} then ${f.at} else ${orderKeys.newestAt} end`,
        newestEventId: sql`case when ${newer} then cast(${o.eventId} as text) else ${orderKeys.newestEventId} end`,
      })
      .where(and(eq(orderKeys.handler, f.handler), eq(orderKeys.orderKey, f.key), eq(orderKeys.runningEventId, o.eventId), held))
      .returning({ handler: orderKeys.handler }),
  );
  if (f.state !== 'released') {
    const next = tx
      .select({ eventId: orderedRuns.eventId })
      .from(orderedRuns)
      .where(and(eq(orderedRuns.handler, f.handler), eq(orderedRuns.orderKey, f.key), eq(orderedRuns.state, 'pending'), ne(orderedRuns.eventId, o.eventId)))
      .orderBy(asc(orderedRuns.at), asc(orderedRuns.eventId))
      .limit(1);
    const due = sql`case when ${deliveries.receivedAt} + ${f.holdMs} > ${o.now} then ${deliveries.receivedAt} + ${f.holdMs} else ${o.now} end`;
    statements.push(
      tx
        .update(deliveries)
        .set({ nextAttemptAt: due })
        .where(and(sql`${deliveries.eventId} = (${next})`, eq(deliveries.status, 'queued'), sql`${deliveries.nextAttemptAt} > ${due}`, held))
        .returning({ eventId: deliveries.eventId }),
    );
  }
  return statements;
}

/**
 * After the outcome of an attempt whose ordered handlers waited: the delivery is due at once if
 * none of them waits any more (the key's holder finished, or the earlier one, while the attempt
 * ran: its wake found this delivery still leased and was overwritten by this outcome).
 */
export function orderRecheckStatement(tx: Tx, t: Tables, o: { eventId: string; now: number }, waiting: readonly OrderFinish[]): ReturningQuery {
  const { orderedRuns, orderKeys, deliveries } = t;
  const stillWaits = waiting.map(
    (e) =>
      sql`(exists (select 1 from ${orderedRuns} where ${earlierPending(t, o.eventId, e)}) or exists (select 1 from ${orderKeys} where ${and(
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

/**
 * The order statements of one outcome, for a driver to run around its outcome write: `before`
 * it (fenced by the claim), `after` it (the recheck of a waiting delivery).
 */
export function orderSettling(t: Tables, o: { eventId: string; claimId?: string; owner: string; now: number; order?: readonly OrderFinish[] }) {
  const finishes = o.order ?? [];
  const waiting = finishes.filter((f) => f.state === 'waiting');
  const claimId = o.claimId ?? o.owner;
  return {
    before: (tx: Tx) => finishes.flatMap((f) => orderFinishStatements(tx, t, { eventId: o.eventId, claimId, now: o.now }, f)),
    after: (tx: Tx) => (waiting.length > 0 ? [orderRecheckStatement(tx, t, o, waiting)] : []),
  };
}
