import { and, asc, count, eq, gt, inArray, isNull, min, sql } from 'drizzle-orm';
import { FRESH_SEQ, freshMarker, type StepRecord, type StepStore } from '../core/steps/step-record.js';
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

type StepParams = { [K in keyof StepRecord]: K extends 'sensitive' ? number : StepRecord[K] } & { claimId: string };
const STEP_KEYS = ['eventId', 'handler', 'seq', 'name', 'kind', 'state', 'attempts', 'result', 'sensitive', 'resultBytes', 'error', 'wakeAt', 'startedAt', 'finishedAt', 'durationMs', 'claimId'] as const;

/** Durable steps, the same statements on every backend (a run's two, prepared once on better-sqlite3). */
export function stepMethods({ db, tables, atomic, prepare }: StoreBackend): StepStore {
  const { handlerSteps: s, deliveries: d, eventWaits: w } = tables;
  const load = prepare<{ eventId: string; handler: string }>(['eventId', 'handler'], (tx, p) => [
    tx.select().from(s).where(and(eq(s.eventId, p.eventId), eq(s.handler, p.handler))).orderBy(asc(s.seq)),
  ]);
  // Written only while the claim holds the delivery (one statement, so D1 runs it as is), and
  // durably: the handler's next line runs once its step is on record.
  const save = prepare<StepParams>(STEP_KEYS, (tx, p) => [
    tx
      .insert(s)
      .select((qb) =>
        qb
          .select({
            eventId: sql<string>`${p.eventId}`.as('event_id'),
            handler: sql<string>`${p.handler}`.as('handler'),
            seq: sql<number>`${p.seq}`.as('seq'),
            name: sql<string>`${p.name}`.as('name'),
            kind: sql<StepRecord['kind']>`${p.kind}`.as('kind'),
            state: sql<StepRecord['state']>`${p.state}`.as('state'),
            attempts: sql<number>`${p.attempts}`.as('attempts'),
            result: sql<string | null>`${p.result}`.as('result'),
            sensitive: sql<number>`${p.sensitive}`.as('sensitive'),
            resultBytes: sql<number | null>`${p.resultBytes}`.as('result_bytes'),
            error: sql<string | null>`${p.error}`.as('error'),
            wakeAt: sql<number | null>`${p.wakeAt}`.as('wake_at'),
            startedAt: sql<number>`${p.startedAt}`.as('started_at'),
            finishedAt: sql<number | null>`${p.finishedAt}`.as('finished_at'),
            durationMs: sql<number | null>`${p.durationMs}`.as('duration_ms'),
          })
          .from(d)
          .where(and(eq(d.eventId, p.eventId), eq(d.claimId, p.claimId))),
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
  async function loadRunSteps(eventId: string, handler: string) {
    // A read, outside any transaction: a query built with values is awaited, a prepared one run.
    const [query] = load(db, { eventId, handler });
    const rows: StepRow[] = await ('then' in query! ? query : query!.all());
    const marker = rows.find((r) => Number(r.seq) === FRESH_SEQ);
    return { steps: rows.filter((r) => r !== marker).map(toStep), generation: marker?.result ?? '' };
  }
  return {
    loadSteps: async (eventId, handler) => (await loadRunSteps(eventId, handler)).steps,
    loadRunSteps,

    async saveStep(step, claimId) {
      const [written] = await atomic((tx) => save(tx, { ...step, sensitive: step.sensitive ? 1 : 0, claimId }));
      return written!.length > 0;
    },

    async stepsOf(eventIds) {
      // The steps a handler took; a run's generation marker is no step.
      const rows = await inChunks(eventIds, (ids) => db.select().from(s).where(and(inArray(s.eventId, ids), gt(s.seq, FRESH_SEQ))).orderBy(asc(s.eventId), asc(s.handler), asc(s.seq)));
      return rows.map(toStep);
    },

    async dropSteps(eventId, handler) {
      const rows = await db
        .delete(s)
        .where(and(eq(s.eventId, eventId), handler === undefined ? undefined : eq(s.handler, handler)))
        .returning({ seq: s.seq });
      // Its waits go with its steps: a fresh run waits again.
      await db.delete(tables.eventWaits).where(and(eq(tables.eventWaits.eventId, eventId), handler === undefined ? undefined : eq(tables.eventWaits.handler, handler)));
      // A new generation for the handler's fresh run: its steps' idempotency keys are new ones.
      if (handler !== undefined) {
        const m = freshMarker(eventId, handler, Date.now());
        await db.insert(s).values({ ...m, sensitive: 0 });
      }
      return rows.filter((r) => Number(r.seq) !== FRESH_SEQ).length;
    },

    async parkedRuns(eventIds) {
      const rows = await inChunks(eventIds, (ids) =>
        db
          .select({ eventId: s.eventId, handler: s.handler, step: s.name, wakeAt: s.wakeAt, types: w.types, podId: w.podId })
          .from(s)
          .innerJoin(d, eq(d.eventId, s.eventId))
          // A wait's row says what it waits for.
          .leftJoin(w, and(eq(w.eventId, s.eventId), eq(w.handler, s.handler), eq(w.seq, s.seq)))
          .where(and(inArray(s.eventId, ids), eq(s.state, 'sleeping'), eq(d.status, 'queued'), isNull(d.leaseOwner))),
      );
      return rows.map((r) => ({
        eventId: r.eventId, handler: r.handler, step: r.step, wakeAt: Number(r.wakeAt),
        ...(r.types !== null && r.podId !== null && { waitingFor: { types: r.types.split(','), podId: r.podId } }),
      }));
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
