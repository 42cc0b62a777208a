import { and, asc, count, eq, inArray, isNull, min, sql } from 'drizzle-orm';
import type { StepRecord, StepStore } from '../core/steps/step-record.js';
import { inChunks, type StoreBackend } from './store-backend.js';

type StepRow = StoreBackend['tables']['handlerSteps']['$inferSelect'];

const toStep = (r: StepRow): StepRecord => ({
  eventId: r.eventId,
  handler: r.handler,
  seq: Number(r.seq),
  name: r.name,
  kind: r.kind,
  state: r.state,
  attempts: Number(r.attempts),
  result: r.result,
  sensitive: Number(r.sensitive) === 1,
  resultBytes: r.resultBytes === null ? null : Number(r.resultBytes),
  error: r.error,
  wakeAt: r.wakeAt === null ? null : Number(r.wakeAt),
  startedAt: Number(r.startedAt),
  finishedAt: r.finishedAt === null ? null : Number(r.finishedAt),
  durationMs: r.durationMs === null ? null : Number(r.durationMs),
});

/** Durable steps, the same statements on every backend. */
export function stepMethods({ db, tables, atomic }: StoreBackend): StepStore {
  const { handlerSteps: s, deliveries: d } = tables;
  return {
    async loadSteps(eventId, handler) {
      const rows = await db.select().from(s).where(and(eq(s.eventId, eventId), eq(s.handler, handler))).orderBy(asc(s.seq));
      return rows.map(toStep);
    },

    async saveStep(step, claimId) {
      // Written only while the claim holds the delivery (one statement, so D1 runs it as is), and
      // durably: the handler's next line runs once its step is on record.
      const [written] = await atomic((tx) => [
        tx
          .insert(s)
          .select((qb) =>
            qb
              .select({
                eventId: sql<string>`${step.eventId}`.as('event_id'),
                handler: sql<string>`${step.handler}`.as('handler'),
                seq: sql<number>`${step.seq}`.as('seq'),
                name: sql<string>`${step.name}`.as('name'),
                kind: sql<StepRecord['kind']>`${step.kind}`.as('kind'),
                state: sql<StepRecord['state']>`${step.state}`.as('state'),
                attempts: sql<number>`${step.attempts}`.as('attempts'),
                result: sql<string | null>`${step.result}`.as('result'),
                sensitive: sql<number>`${step.sensitive ? 1 : 0}`.as('sensitive'),
                resultBytes: sql<number | null>`${step.resultBytes}`.as('result_bytes'),
                error: sql<string | null>`${step.error}`.as('error'),
                wakeAt: sql<number | null>`${step.wakeAt}`.as('wake_at'),
                startedAt: sql<number>`${step.startedAt}`.as('started_at'),
                finishedAt: sql<number | null>`${step.finishedAt}`.as('finished_at'),
                durationMs: sql<number | null>`${step.durationMs}`.as('duration_ms'),
              })
              .from(d)
              .where(and(eq(d.eventId, step.eventId), eq(d.claimId, claimId))),
          )
          .onConflictDoUpdate({
            target: [s.eventId, s.handler, s.seq],
            set: {
              name: sql`excluded.name`,
              kind: sql`excluded.kind`,
              state: sql`excluded.state`,
              attempts: sql`excluded.attempts`,
              result: sql`excluded.result`,
              sensitive: sql`excluded.sensitive`,
              resultBytes: sql`excluded.result_bytes`,
              error: sql`excluded.error`,
              wakeAt: sql`excluded.wake_at`,
              startedAt: sql`excluded.started_at`,
              finishedAt: sql`excluded.finished_at`,
              durationMs: sql`excluded.duration_ms`,
            },
          })
          .returning({ eventId: s.eventId }),
      ]);
      return written!.length > 0;
    },

    async stepsOf(eventIds) {
      const rows = await inChunks(eventIds, (ids) => db.select().from(s).where(inArray(s.eventId, ids)).orderBy(asc(s.eventId), asc(s.handler), asc(s.seq)));
      return rows.map(toStep);
    },

    async dropSteps(eventId, handler) {
      const rows = await db
        .delete(s)
        .where(and(eq(s.eventId, eventId), handler === undefined ? undefined : eq(s.handler, handler)))
        .returning({ eventId: s.eventId });
      return rows.length;
    },

    async parkedRuns(eventIds) {
      const rows = await inChunks(eventIds, (ids) =>
        db
          .select({ eventId: s.eventId, handler: s.handler, step: s.name, wakeAt: s.wakeAt })
          .from(s)
          .innerJoin(d, eq(d.eventId, s.eventId))
          .where(and(inArray(s.eventId, ids), eq(s.state, 'sleeping'), eq(d.status, 'queued'), isNull(d.leaseOwner))),
      );
      return rows.map((r) => ({ eventId: r.eventId, handler: r.handler, step: r.step, wakeAt: Number(r.wakeAt) }));
    },

    async parkStats() {
      const [row] = await db
        .select({ parked: count(), earliest: min(s.wakeAt) })
        .from(s)
        .innerJoin(d, eq(d.eventId, s.eventId))
        .where(and(eq(s.state, 'sleeping'), eq(d.status, 'queued'), isNull(d.leaseOwner)));
      return { parked: Number(row?.parked ?? 0), earliestWakeAt: row?.earliest === null || row?.earliest === undefined ? null : Number(row.earliest) };
    },
  };
}
