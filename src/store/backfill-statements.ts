import { and, eq, gte, inArray, lt, sql, type SQL } from 'drizzle-orm';
import { FRESH_SEQ, freshMarker } from '../core/steps/step-record.js';
import type { BackfillSelection, BackfillStep } from '../core/backfill/backfill-store.js';
import type { OrderEntry } from '../core/delivery.js';
import type { QueryDatabase, ReturningQuery, Tables } from './store-backend.js';

/**
 * The SQL of backfills, the same on every backend. A page's requeue is a list of statements each
 * fenced by the backfill's claim and step, because D1 runs them as one batch that cannot branch:
 * the first statement locks the backfill's row (PostgreSQL: a replica taking the lease over waits
 * for this transaction, then finds the lease extended), the last one advances it.
 */

type Tx = QueryDatabase;

/** Dead on arrival: an authentic body no handler can read (stored dead by ingest, or found so at dispatch). */
const DEAD_ON_ARRIVAL = ['empty_body:%', 'invalid_utf8:%', 'invalid_json:%'];

/** The deliveries a selection covers: its types and range, `processed` or `ignored`. */
export function coveredBy({ deliveries: d }: Tables, s: BackfillSelection): SQL {
  return and(
    inArray(d.eventType, [...s.types]),
    s.since !== null ? gte(d.receivedAt, s.since) : undefined,
    lt(d.receivedAt, s.until),
    // Literal, as the partial indexes' conditions are written.
    sql`${d.status} in ('processed', 'ignored')`,
  )!;
}

/** The dead letters beside them (dead after dispatch: a handler failed on them), left to their redelivery. */
export function deadLettersIn({ deliveries: d }: Tables, s: BackfillSelection): SQL {
  return and(
    inArray(d.eventType, [...s.types]),
    s.since !== null ? gte(d.receivedAt, s.since) : undefined,
    lt(d.receivedAt, s.until),
    sql`${d.status} = 'dead'`,
    sql`not (${sql.join(DEAD_ON_ARRIVAL.map((p) => sql`coalesce(${d.lastError}, '') like ${p}`), sql` or `)})`,
  )!;
}

/**
 * Whether the selection's handler already handled a delivery: its ledger row says it succeeded or
 * was skipped as stale (a row written with attempts 0 marks one that never ran), or the delivery
 * was processed at its first attempt (no ledger row at all) after the handler was first seen running.
 */
export function handledBy({ deliveries: d, handlerRuns: r }: Tables, s: BackfillSelection): SQL {
  const ran = sql`exists (select 1 from ${r} where ${r.eventId} = ${d.eventId} and ${r.handler} = ${s.handler} and ${r.status} in ('succeeded', 'skipped') and ${r.attempts} > 0)`;
  if (s.firstSeenAt === null) return ran;
  return sql`(${ran} or (${d.status} = 'processed' and ${d.processedAt} >= ${s.firstSeenAt} and not exists (select 1 from ${r} where ${r.eventId} = ${d.eventId})))`;
}

/** The backfill still held by this claim at this step (a cancel, a takeover or a page already done all fail it). */
function heldAt({ backfills: b }: Tables, f: BackfillStep['backfill']): SQL {
  return and(eq(b.id, f.id), eq(b.claimId, f.claimId), eq(b.state, 'running'), eq(b.step, f.step))!;
}

/** The same, inside a statement on another table. */
function fence(t: Tables, f: BackfillStep['backfill']): SQL {
  return sql`exists (select 1 from ${t.backfills} where ${heldAt(t, f)})`;
}

/** The delivery may be requeued now: still `processed` or `ignored`, no live lease (a replay or a dispatcher holds none). */
function requeueable({ deliveries: d }: Tables, eventId: string, now: number): SQL {
  return and(eq(d.eventId, eventId), sql`${d.status} in ('processed', 'ignored')`, sql`(${d.leaseUntil} is null or ${d.leaseUntil} < ${now})`)!;
}

function ledgerRow(tx: Tx, t: Tables, eventId: string, run: { handler: string; status: 'queued' | 'succeeded'; attempts: number }, now: number, when: SQL): ReturningQuery {
  const { deliveries: d, handlerRuns: r } = t;
  const insert = tx.insert(r).select((qb) =>
    qb
      .select({
        eventId: d.eventId,
        handler: sql<string>`cast(${run.handler} as text)`.as('handler'),
        status: sql<'queued' | 'succeeded'>`cast(${run.status} as text)`.as('status'),
        attempts: sql<number>`cast(${run.attempts} as integer)`.as('attempts'),
        lastError: sql<string | null>`cast(null as text)`.as('last_error'),
        updatedAt: sql<number>`cast(${now} as bigint)`.as('updated_at'),
        durationMs: sql<number | null>`cast(null as integer)`.as('duration_ms'),
        failures: sql<number>`cast(0 as integer)`.as('failures'),
      })
      .from(d)
      .where(and(eq(d.eventId, eventId), when)),
  );
  // The handler to run is marked `queued` whatever its row said (its last error and duration stay
  // on view until it runs); another handler keeps its row, and gets one only where it has none.
  return (
    run.status === 'queued'
      ? insert.onConflictDoUpdate({
          target: [r.eventId, r.handler],
          set: { status: sql`excluded.status`, attempts: sql`excluded.attempts`, updatedAt: sql`excluded.updated_at` },
        })
      : insert.onConflictDoNothing()
  ).returning({ eventId: r.eventId });
}

function freshSteps(tx: Tx, t: Tables, eventId: string, handler: string, when: SQL): ReturningQuery[] {
  const { deliveries: d, handlerSteps: st } = t;
  const marker = freshMarker(eventId, handler, 0);
  return [
    tx
      .delete(st)
      .where(and(eq(st.eventId, eventId), eq(st.handler, handler), sql`exists (select 1 from ${d} where ${when})`))
      .returning({ eventId: st.eventId }),
    // A new generation: the fresh run's idempotency keys are not the old run's.
    tx
      .insert(st)
      .select((qb) =>
        qb
          .select({
            eventId: d.eventId,
            handler: sql<string>`cast(${handler} as text)`.as('handler'),
            seq: sql<number>`cast(${FRESH_SEQ} as integer)`.as('seq'),
            name: sql<string>`cast(${marker.name} as text)`.as('name'),
            kind: sql<'step'>`cast(${marker.kind} as text)`.as('kind'),
            state: sql<'done'>`cast(${marker.state} as text)`.as('state'),
            attempts: sql<number>`cast(1 as integer)`.as('attempts'),
            result: sql<string>`cast(${marker.result} as text)`.as('result'),
            sensitive: sql<number>`cast(0 as integer)`.as('sensitive'),
            resultBytes: sql<null>`null`.as('result_bytes'),
            error: sql<null>`null`.as('error'),
            wakeAt: sql<null>`null`.as('wake_at'),
            startedAt: sql<number>`cast(${marker.startedAt} as bigint)`.as('started_at'),
            finishedAt: sql<null>`null`.as('finished_at'),
            durationMs: sql<null>`null`.as('duration_ms'),
          })
          .from(d)
          .where(and(eq(d.eventId, eventId), when)),
      )
      .onConflictDoNothing()
      .returning({ eventId: st.eventId }),
  ];
}


function orderedRow(tx: Tx, t: Tables, eventId: string, e: OrderEntry, when: SQL): ReturningQuery {
  const { deliveries: d, orderedRuns: o } = t;
  return tx
    .insert(o)
    .select((qb) =>
      qb
        .select({
          handler: sql<string>`cast(${e.handler} as text)`.as('handler'),
          orderKey: sql<string>`cast(${e.key} as text)`.as('order_key'),
          eventId: d.eventId,
          at: sql<number>`cast(${e.at} as bigint)`.as('at'),
          receivedAt: d.receivedAt,
          state: sql<'pending'>`'pending'`.as('state'),
        })
        .from(d)
        .where(and(eq(d.eventId, eventId), when)),
    )
    .onConflictDoNothing()
    .returning({ eventId: o.eventId });
}

/**
 * A page's statements, in order: the backfill's row (locked, its requeued count before), each
 * delivery's ledger rows, ordered rows and requeue, then the backfill's advance (its requeued count
 * after). Each statement is fenced by the claim and step, and each delivery's by its status and lease.
 */
export function backfillStepStatements(tx: Tx, t: Tables, s: BackfillStep): ReturningQuery[] {
  const { deliveries: d, backfills: b } = t;
  const held = fence(t, s.backfill);
  const statements: ReturningQuery[] = [
    tx.update(b).set({ updatedAt: s.now }).where(heldAt(t, s.backfill)).returning({ requeued: b.requeued }),
  ];
  for (const item of s.deliveries) {
    const when = and(requeueable(t, item.eventId, s.now), held)!;
    // Rows first: they are written only while the delivery is still what the page found.
    for (const run of item.runs) statements.push(ledgerRow(tx, t, item.eventId, run, s.now, when));
    // The handler a backfill runs starts its durable steps fresh (issue 36 §3): a run of it that
    // parked or failed before a deploy dropped it never resumes from what it recorded then.
    for (const run of item.runs) if (run.status === 'queued') statements.push(...freshSteps(tx, t, item.eventId, run.handler, when));
    for (const e of item.order ?? []) statements.push(orderedRow(tx, t, item.eventId, e, when));
    statements.push(
      tx
        .update(d)
        .set({ status: 'queued', nextAttemptAt: s.now, leaseOwner: null, leaseUntil: null, claimId: null })
        .where(when)
        .returning({ eventId: d.eventId }),
    );
  }
  const ids = s.deliveries.map((x) => x.eventId);
  const requeued = ids.length === 0
    ? sql`0`
    : sql`(select count(*) from ${d} where ${and(inArray(d.eventId, ids), eq(d.status, 'queued'), eq(d.nextAttemptAt, s.now))})`;
  statements.push(
    tx
      .update(b)
      .set({
        step: sql`${b.step} + 1`,
        cursorReceivedAt: s.cursor.receivedAt,
        cursorEventId: s.cursor.eventId,
        requeued: sql`${b.requeued} + ${requeued}`,
        skipped: sql`${b.skipped} + cast(${s.passed} as integer) - ${requeued}`,
        recent: JSON.stringify(s.recent),
        leaseUntil: s.now + s.leaseMs,
        updatedAt: s.now,
      })
      .where(heldAt(t, s.backfill))
      .returning({ requeued: b.requeued }),
  );
  return statements;
}
