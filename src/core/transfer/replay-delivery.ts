import { systemClock, type Clock } from '../clock.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Delivery, DeliveryStatus, DispatchOutcome, DispatchStore, TransferStore } from '../delivery-store.js';
import type { Logger } from '../observability/logger.js';
import { PASS_THROUGH_GATE, type AttemptGate } from '../dispatch/attempt-gate.js';
import { createDispatchEvents } from '../dispatch/dispatch-events.js';
import { instrumentAttempt, instrumentCalls, instrumentSteps, type DispatchInstrument } from '../dispatch/dispatch-instrument.js';
import { attemptDuration, describeFailures, ledgerRuns, type HandlerResult } from '../dispatch/handler-result.js';
import { parseDeliveryBody } from '../dispatch/parse-delivery-body.js';
import type { Router } from '../dispatch/router.js';
import { runAttemptHandlers } from '../dispatch/run-attempt-handlers.js';
import type { PayloadSchemaMap } from '../dispatch/typed-payload.js';
import { redactNothing, type Redact } from '../observability/redact-secrets.js';
import { createLineWriter } from '../runner/handler-lines.js';
import type { HandlerRunner } from '../runner/handler-runner.js';
import { createInThisThreadRunner } from '../runner/in-this-thread.js';
import type { RunnerSteps } from '../runner/job-runner.js';
import { firstAttemptRuns, processedAtFirstAttempt } from './first-attempt-runs.js';
import type { StepStore } from '../steps/step-record.js';
import type { PodsClient } from '../pods/pods-client.js';

export interface ReplayerOptions {
  store: Pick<TransferStore, 'leaseEvents'> & Pick<DispatchStore, 'handlerRuns' | 'completeDispatch'> & Pick<StepStore, 'dropSteps'>;
  router: Router;
  logger: Logger;
  clock?: Clock;
  /** Time limit per handler call, unless the handler sets its own (default 30 s). */
  handlerTimeoutMs?: number;
  /** Run only the handler of this name (it must be one of the router's). */
  handler?: string;
  /** The lease owner id of this replay. */
  owner?: string;
  /** Where handler code runs (default: this thread). */
  runner?: HandlerRunner;
  /**
   * Decides what runs now, as the dispatcher's does (ordered handlers run only in their key's
   * turn, the dispatcher runs the rest later); default: every handler runs.
   */
  gate?: AttemptGate;
  /** What watches each replay (a span per replayed delivery and handler run). */
  instruments?: readonly DispatchInstrument[];
  /** The schemas `podhook schemas` generated, applied as the dispatcher applies them. */
  payloadSchemas?: PayloadSchemaMap;
  /** Hides secrets in handlers' errors and log lines, once, where they come back. */
  redact?: Redact;
  /** For the default runner: the lowest handler level written (`handlerLevelFloor`). */
  levelFloor?: number;
  /** Durable steps for the default runner. */
  steps?: RunnerSteps;
  /** The pod client for the default runner's `ctx.pods`. */
  pods?: () => Promise<PodsClient>;
  /** Drops the handlers' recorded steps first, so they run from the start (`replay --fresh`). */
  fresh?: boolean;
}

/**
 * `succeeded`: every handler run succeeded; `failed`: one failed, or the body cannot be parsed;
 * `skipped`: no handler (or not the one named) takes the type; `busy`: a running dispatcher holds it;
 * `waiting`: the gate left a handler waiting (an ordered handler's key is not free): the delivery
 * is handed to the dispatcher, which runs that handler in its turn; `lost`: the outcome was not
 * recorded, because another claim took the delivery over meanwhile (its lease ran out).
 */
export type ReplayOutcome = 'succeeded' | 'failed' | 'skipped' | 'busy' | 'waiting' | 'lost';

export interface ReplayResult {
  eventId: string;
  eventType: string;
  outcome: ReplayOutcome;
  /** The delivery's status afterwards (as it was when nothing was written). */
  status: DeliveryStatus;
  runs: HandlerResult[];
  /** Why it failed or was skipped. */
  reason: string | null;
}

export interface Replayer {
  /** The handlers a replay of this delivery runs: all that take its type, or only the one named. */
  handlersFor(delivery: Delivery): readonly HandlerDefinition[];
  /** Runs those handlers again on the stored delivery and records the outcome. */
  replay(delivery: Delivery): Promise<ReplayResult>;
}

/**
 * Replays stored deliveries through the handler modules, in this process, with the dispatcher's
 * own runner and gate. Unlike a dispatch it runs handlers that already succeeded (that is the
 * point), and it never schedules a retry. What it records, like one more dispatch attempt:
 * each run in the per-handler ledger and the run history (with the runs of a first-attempt
 * success before it, which left no row); the delivery `processed` when every run succeeded (and no
 * other handler of the type has a failure on record: then its status is kept), `dead` with the
 * error when one failed. It leases the row first, so it never runs beside a live dispatcher.
 */
export function createReplayer({
  store,
  router,
  logger,
  clock = systemClock,
  handlerTimeoutMs = 30_000,
  handler: only,
  owner = `replay-${crypto.randomUUID()}`,
  redact = redactNothing,
  steps,
  pods,
  fresh = false,
  levelFloor,
  gate = PASS_THROUGH_GATE,
  instruments = [],
  payloadSchemas,
  runner = createInThisThreadRunner({
    clock, handlerTimeoutMs, lines: createLineWriter(logger, redact), levelFloor, schemas: payloadSchemas, pods,
    steps: steps && { ...steps, wrapStep: steps.wrapStep ?? instrumentSteps(instruments) },
  }),
}: ReplayerOptions): Replayer {
  const events = createDispatchEvents(instruments.map((i) => i.subscriber));
  const wrap = instrumentCalls(instruments);
  const leaseMs = Math.max(handlerTimeoutMs, ...router.handlers.map((h) => h.timeoutMs ?? 0)) + 5_000;
  const handlersFor = (d: Delivery) => router.handlersFor(d.eventType).filter((h) => only === undefined || h.name === only);

  async function replay(delivery: Delivery): Promise<ReplayResult> {
    const result = (outcome: ReplayOutcome, reason: string | null, status = delivery.status, runs: HandlerResult[] = []): ReplayResult => ({
      eventId: delivery.eventId,
      eventType: delivery.eventType,
      outcome,
      status,
      runs,
      reason,
    });
    const handlers = handlersFor(delivery);
    if (handlers.length === 0) {
      return result('skipped', only === undefined ? 'no handler for this event type' : `handler "${only}" does not take ${delivery.eventType}`);
    }
    const body = parseDeliveryBody(delivery.body);
    if (!body.ok) return result('failed', body.error);

    const [leased] = await store.leaseEvents({ eventIds: [delivery.eventId], owner, now: clock(), leaseMs });
    if (!leased) return result('busy', 'a running podhook is dispatching it: try again once it is done');

    // From the start: what the handlers recorded before is dropped (a handler changed under a parked run).
    if (fresh) for (const h of handlers) await store.dropSteps(leased.eventId, h.name);
    const ledger = await store.handlerRuns([leased.eventId]);
    // A delivery processed at its first attempt has no ledger rows: each handler ran once.
    const first = processedAtFirstAttempt(leased, ledger);
    const ranBefore = (name: string) => ledger.find((r) => r.handler === name)?.attempts ?? (first ? leased.attempts : 0);
    const attemptOf = (h: HandlerDefinition) => ranBefore(h.name) + 1;
    const payload = () => body.payload;
    const plan = await gate.open({ delivery: leased, payload, pending: handlers, now: clock(), attemptOf, events, logger });
    const { results: runs, waitUntil } = await runAttemptHandlers({
      delivery: leased, parsed: body.payload, plan, pending: handlers, attemptOf, runner, wrap, events, now: clock, claimId: owner, logger, redact,
    });
    const ran = new Set(handlers.map((h) => h.name));
    const failedElsewhere = ledger.some(
      (r) => r.status === 'failed' && !ran.has(r.handler) && router.handlersFor(leased.eventType).some((h) => h.name === r.handler),
    );
    const lastError = describeFailures(runs);
    const base = {
      eventId: leased.eventId,
      owner,
      attempts: leased.attempts + 1,
      now: clock(),
      runs: ledgerRuns(leased.eventId, runs),
      durationMs: attemptDuration(runs),
      // The runs of a first-attempt success left no row: recorded now, before this replay's.
      history: firstAttemptRuns(leased, router.handlersFor(leased.eventType), ledger),
    };
    let outcome: DispatchOutcome;
    if (lastError === null && waitUntil !== undefined) {
      // Not its turn: the dispatcher runs the rest when it is due (a gate's settling wakes it).
      outcome = { ...base, attempts: leased.attempts, status: 'queued', lastError: leased.lastError, nextAttemptAt: waitUntil };
    } else if (lastError !== null) {
      outcome = { ...base, status: 'dead', lastError, nextAttemptAt: null };
    } else if (failedElsewhere) {
      // Another handler still has a failure on record, so the delivery is not done: it keeps its
      // status (a failed one retries on schedule). Only a dispatched row has a ledger, so a
      // queued or quarantined one cannot get here; were it to, it would become due like a failed one.
      const kept = leased.status === 'queued' || leased.status === 'quarantined' ? 'failed' : leased.status;
      outcome = { ...base, status: kept, lastError: leased.lastError, nextAttemptAt: kept === 'failed' ? (leased.nextAttemptAt ?? base.now) : null };
    } else {
      outcome = { ...base, status: 'processed', lastError: null, nextAttemptAt: null };
    }
    plan?.settle?.(outcome, (name) => runs.some((r) => r.handler === name && r.ok));
    const [recorded] = await store.completeDispatch([outcome]);
    if (recorded !== leased.eventId) {
      // The lease ran out and another claim took the delivery: what this replay did is not its record.
      logger.warn({ event_id: leased.eventId, owner }, 'replay outcome not recorded: another claim holds the delivery');
      return result('lost', 'another podhook took the delivery over while it was replayed (its lease ran out): its outcome was not recorded', leased.status, runs);
    }
    if (lastError === null && waitUntil !== undefined) {
      const waits = [
        ...(plan?.steps ?? []).flatMap((st) => (st.kind === 'wait' ? [`${st.handler.name} ${st.reason}`] : [])),
        ...runs.flatMap((r) => (r.outcome === 'parked' ? [`${r.handler} parked at a sleep until ${new Date(r.waitUntil!).toISOString()}`] : [])),
      ];
      return result('waiting', `${waits.join('; ')}: handed to the dispatcher, which runs it in its turn`, outcome.status, runs);
    }
    return result(lastError === null ? 'succeeded' : 'failed', lastError, outcome.status, runs);
  }

  return { handlersFor, replay: instrumentAttempt(instruments, replay, (r) => r.outcome) };
}
