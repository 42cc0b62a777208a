import { z } from 'zod';
import { DELIVERY_STATUSES, type Delivery } from '../../core/delivery.js';
import type { DeliveryStats, DeliveryStore, HandlerAttempt, HandlerAttemptOutcome, HandlerRun, ScanDeliveriesOptions } from '../../core/delivery-store.js';
import type { Router } from '../../core/dispatch/router.js';
import { InvalidRequestError } from '../../core/errors.js';
import type { ParkedRun, StepRecord } from '../../core/steps/step-record.js';
import { isoTime, parseIsoTime } from '../../core/steps/time-or-duration.js';
import { waitingForJson, type WaitingFor } from '../../core/transfer/delivery-export.js';

/**
 * A page position: the last row's received time and event id. Opaque to clients; keyset paging
 * (`scan`), so a page costs the same however deep it is.
 */
export function encodeCursor(d: Pick<Delivery, 'receivedAt' | 'eventId'>): string {
  return `${d.receivedAt}.${d.eventId}`;
}

const CURSOR = /^(\d{1,15})\.([0-9a-f-]{36})$/;

const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());
/** An ISO 8601 date or time that exists (2026-02-30 is refused, not rolled over to March). */
export const sinceTime = z
  .string()
  .transform((s, ctx) => {
    const at = parseIsoTime(s);
    if (at !== null) return at;
    ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 date or time that exists' });
    return z.NEVER;
  });
const whole = (min: number, max: number) =>
  z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max));

const FilterSchema = {
  status: optional(z.enum(DELIVERY_STATUSES)),
  type: optional(z.string().max(200)),
  since: optional(sinceTime),
  /** true: only deliveries whose payload drifted from its learned shape; false: only the others. */
  drift: optional(z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true')),
  cursor: optional(z.string().regex(CURSOR, 'is not a cursor this server gave')),
};

const ListSchema = z.object({ ...FilterSchema, limit: optional(whole(1, 500)), order: optional(z.enum(['desc', 'asc'])) });
const ExportSchema = z.object({ ...FilterSchema, limit: optional(whole(1, 1000)), wait: optional(whole(0, 25)) });
const StatsSchema = z.object({ hours: optional(whole(1, 168)) });

/** Parses query parameters; a bad one is a 400 naming it. */
function parse<T extends z.ZodType>(schema: T, query: Record<string, string>): z.output<T> {
  const parsed = schema.safeParse(query);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const name = String(issue.path[0] ?? 'query');
  throw new InvalidRequestError(`${name} ${issue.message}`, 'invalid_admin_query', { parameter: name });
}

const toScan = (q: { status?: Delivery['status']; type?: string; since?: number; drift?: boolean; cursor?: string }): Omit<ScanDeliveriesOptions, 'limit'> => {
  const m = q.cursor ? CURSOR.exec(q.cursor) : null;
  return { status: q.status, eventType: q.type, since: q.since, drift: q.drift, after: m ? { receivedAt: Number(m[1]), eventId: m[2]! } : undefined };
};

export function parseListQuery(query: Record<string, string>) {
  const q = parse(ListSchema, query);
  return { ...toScan(q), limit: q.limit ?? 50, order: q.order ?? 'desc' } satisfies ScanDeliveriesOptions;
}

export function parseExportQuery(query: Record<string, string>) {
  const q = parse(ExportSchema, query);
  return { scan: { ...toScan(q), limit: q.limit ?? 100, order: 'asc' } satisfies ScanDeliveriesOptions, waitSeconds: q.wait ?? 0, cursor: q.cursor };
}

export const parseStatsQuery = (query: Record<string, string>) => ({ hours: parse(StatsSchema, query).hours ?? 24 });

/** One page and the cursor of the next (null when this one is the last). */
export async function pageOf(store: DeliveryStore, options: ScanDeliveriesOptions): Promise<{ rows: Delivery[]; next: string | null }> {
  // One row more than asked tells whether another page follows.
  const rows = await store.scan({ ...options, limit: options.limit + 1 });
  const more = rows.length > options.limit;
  if (more) rows.length = options.limit;
  return { rows, next: more ? encodeCursor(rows.at(-1)!) : null };
}

/** One durable step of a handler's run, as the admin API answers it: never its result, only the result's size. */
export interface StepEntry {
  /** Its position in the run, from 1. */
  seq: number;
  name: string;
  kind: StepRecord['kind'];
  /** `done`, `failed` (its last try threw) or `sleeping` (a sleep not over). */
  state: StepRecord['state'];
  /** How many times its function ran (a sleep: 1). */
  attempts: number;
  duration_ms: number | null;
  /** When its last try started, and ended (null while it sleeps, or had no end recorded). */
  started_at: string;
  finished_at: string | null;
  /** The recorded result's size in bytes (its JSON); null until done, and for a sealed one. */
  result_bytes: number | null;
  /** The result is sealed with STEP_ENCRYPTION_KEY (`sensitive: true`): nothing of it is shown, not even its size. */
  sealed: boolean;
  /** Its last try's error (redacted like every handler error). */
  error: string | null;
  /** A sleep's wake time; a wait's timeout. */
  wake_at: string | null;
  /** A done wait (`ctx.waitForEvent`): the event it resolved with (null: none came by its timeout). */
  matched_event_id: string | null;
}

/** A recorded step without its result: what an operator may see of it. */
export function stepEntry(s: StepRecord): StepEntry {
  return {
    seq: s.seq,
    name: s.name,
    kind: s.kind,
    state: s.state,
    attempts: s.attempts,
    duration_ms: s.durationMs,
    started_at: isoTime(s.startedAt)!,
    finished_at: isoTime(s.finishedAt),
    result_bytes: s.sensitive ? null : s.resultBytes,
    sealed: s.sensitive,
    error: s.error,
    wake_at: isoTime(s.wakeAt),
    matched_event_id: matchedEventId(s),
  };
}

/** The event a done wait resolved with (its id only: a step's result is shown nowhere), or null. */
function matchedEventId(s: StepRecord): string | null {
  if (s.kind !== 'wait' || s.state !== 'done' || s.result === null || s.sensitive) return null;
  const v = (JSON.parse(s.result) as { v?: { id?: unknown } | null }).v;
  return typeof v?.id === 'string' ? v.id : null;
}

/** One entry of a delivery's `runs`, as the admin API answers it and the inspector shows it. */
export interface RunEntry {
  handler: string;
  attempt: number;
  /** `queued`: an operator's replay marked it to run again and it has not run yet. */
  outcome: HandlerAttemptOutcome | 'queued';
  error: string | null;
  duration_ms: number | null;
  at: string | null;
  /** The dispatcher (replica) that ran it; null where it was not recorded (runs before this was kept). */
  replica: string | null;
  /**
   * The handler's durable steps in order, as its runs recorded them, on its last entry ([] when it
   * recorded none); null on its earlier entries (a step keeps only its latest state).
   */
  steps: StepEntry[] | null;
  /** On the handler's last entry while the run is parked at a sleep: the sleep's name and when it wakes; else null. */
  parked: { step: string; wake_at: string; waiting_for: WaitingFor | null } | null;
}

/** Reads what `deliveryRuns` needs: the run history, the ledger for what is not in it, and the recorded steps. */
export async function readRuns(store: DeliveryStore, d: Delivery, router: Router): Promise<RunEntry[]> {
  const [history, ledger, steps, parked] = await Promise.all([
    store.handlerAttempts([d.eventId]),
    store.handlerRuns([d.eventId]),
    store.stepsOf([d.eventId]),
    d.status === 'queued' ? store.parkedRuns([d.eventId]) : [],
  ]);
  return withSteps(deliveryRuns(d, history, ledger, router), steps, parked);
}

type BareRun = Omit<RunEntry, 'steps' | 'parked'>;

/** The runs with each handler's steps and parked sleep on its last entry. */
export function withSteps(runs: readonly BareRun[], steps: readonly StepRecord[], parked: readonly ParkedRun[]): RunEntry[] {
  const last = new Map(runs.map((r, i) => [r.handler, i]));
  return runs.map((r, i) => {
    if (last.get(r.handler) !== i) return { ...r, steps: null, parked: null };
    const sleep = parked.find((p) => p.handler === r.handler);
    return {
      ...r,
      steps: steps.filter((s) => s.handler === r.handler).sort((a, b) => a.seq - b.seq).map(stepEntry),
      parked: sleep ? { step: sleep.step, wake_at: isoTime(sleep.wakeAt)!, waiting_for: waitingForJson(sleep) } : null,
    };
  });
}

/**
 * The `runs` of a delivery, oldest first: every handler run from its history, then the handlers
 * an operator's replay queued (a parked run's own `queued` row is not one). A delivery processed at its first attempt has no history (ingest
 * and dispatch stay lean): each handler that takes its type ran once and succeeded, at
 * `processed_at`, in the attempt's duration (the slowest handler's), on `ran_by`; a later run
 * (a replay) records that one in the history with its own. A handler with a ledger row and no
 * history (a run recorded before the history was kept, a backfill's mark of a handler that had
 * succeeded) shows the ledger's last run, before the history.
 */
export function deliveryRuns(d: Delivery, history: readonly HandlerAttempt[], ledger: readonly HandlerRun[], router: Router): BareRun[] {
  if (history.length === 0 && ledger.length === 0 && d.status === 'processed') {
    return router.handlersFor(d.eventType).map((h) => ({
      handler: h.name,
      attempt: 1,
      outcome: 'succeeded',
      error: null,
      duration_ms: d.durationMs ?? null,
      at: isoTime(d.processedAt),
      replica: d.ranBy || null,
    }));
  }
  const inHistory = new Set(history.map((r) => r.handler));
  const ledgerOnly = ledger
    .filter((r) => r.status !== 'queued' && !inHistory.has(r.handler))
    .map((r): BareRun => ({ handler: r.handler, attempt: r.attempts, outcome: r.status, error: r.lastError, duration_ms: r.durationMs ?? null, at: isoTime(r.at), replica: null }));
  // A run parked at a sleep leaves its handler `queued` in the ledger, at the parked run's attempt:
  // that is the parked run itself (shown with its sleep), not a replay's mark.
  const parkedRun = (r: HandlerRun) => history.some((h) => h.handler === r.handler && h.attempt === r.attempts && h.outcome === 'parked');
  const queued = ledger
    .filter((r) => r.status === 'queued' && !parkedRun(r))
    .map((r): BareRun => ({ handler: r.handler, attempt: r.attempts, outcome: 'queued', error: null, duration_ms: null, at: isoTime(r.at), replica: null }));
  return [
    ...ledgerOnly,
    ...history.map((r): BareRun => ({ handler: r.handler, attempt: r.attempt, outcome: r.outcome, error: r.error, duration_ms: r.durationMs, at: isoTime(r.at), replica: r.ranBy || null })),
    ...queued,
  ];
}

export interface Downtime {
  /** Epoch ms. */
  from: number;
  until: number;
}

const HOUR_MS = 3_600_000;
/** Duration samples read per stats call at most (the most recent). */
export const MAX_DURATION_SAMPLES = 20_000;

function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The answer of `GET /_podhook/api/stats`, from the store's counts, every hour of the window filled. */
export function statsAnswer(stats: DeliveryStats, router: Router, { now, hours, downtime }: { now: number; hours: number; downtime: Downtime | null }) {
  const first = Math.floor((now - hours * HOUR_MS) / HOUR_MS) * HOUR_MS;
  const perHour = new Map<number, Record<Delivery['status'], number>>();
  for (let h = first; h <= now; h += HOUR_MS) perHour.set(h, { queued: 0, processed: 0, failed: 0, dead: 0, ignored: 0, quarantined: 0 });
  for (const r of stats.hourly) {
    const row = perHour.get(r.hour);
    if (row) row[r.status] += r.count;
  }
  const handlers = new Map<string, { runs: number; failures: number; durations: number[] }>();
  const entry = (name: string) => {
    let e = handlers.get(name);
    if (!e) handlers.set(name, (e = { runs: 0, failures: 0, durations: [] }));
    return e;
  };
  for (const h of router.handlers) entry(h.name);
  for (const r of stats.ledger) {
    const e = entry(r.handler);
    e.runs += r.runs;
    e.failures += r.failures;
  }
  for (const r of stats.firstAttempt) for (const h of router.handlersFor(r.eventType)) entry(h.name).runs += r.count;
  for (const s of stats.durations) {
    if (s.handler !== null) entry(s.handler).durations.push(s.durationMs);
    else for (const h of router.handlersFor(s.eventType)) entry(h.name).durations.push(s.durationMs);
  }
  return {
    since: isoTime(now - hours * HOUR_MS)!,
    hours,
    deliveries_per_hour: [...perHour].map(([hour, counts]) => ({ hour: isoTime(hour)!, ...counts })),
    handlers: [...handlers].map(([handler, e]) => {
      const sorted = e.durations.sort((a, b) => a - b);
      return { handler, runs: e.runs, failures: e.failures, p50_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99) };
    }),
    dead_letters: stats.dead,
    last_downtime: downtime && { from: isoTime(downtime.from)!, until: isoTime(downtime.until)!, minutes: Math.round((downtime.until - downtime.from) / 60_000) },
  };
}

export type StatsAnswer = ReturnType<typeof statsAnswer>;
