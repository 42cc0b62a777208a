import { systemClock, type Clock } from '../clock.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Delivery, DeliveryStatus, DeliveryStore, DispatchOutcome } from '../delivery-store.js';
import type { Logger } from '../observability/logger.js';
import type { Router } from '../dispatch/router.js';
import { SPAN, type PodhookTracing } from '../tracing/index.js';
import { attemptDuration, createHandlerRunner, describeFailures, ledgerRuns, parseDeliveryBody, type HandlerResult } from '../dispatch/run-handler.js';
import { openOrderGate, orderFinishes } from '../order/order-gate.js';
import type { Ordering } from '../order/ordering.js';
import { runGateSteps } from '../order/run-gate-steps.js';
import { typedPayloads, type PayloadSchemaMap } from '../dispatch/typed-payload.js';

export interface ReplayerOptions {
  store: DeliveryStore;
  router: Router;
  logger: Logger;
  clock?: Clock;
  /** Time limit per handler call, unless the handler sets its own (default 30 s). */
  handlerTimeoutMs?: number;
  /** Run only the handler of this name (it must be one of the router's). */
  handler?: string;
  /** The lease owner id of this replay. */
  owner?: string;
  /** The ordered handlers: a replay runs them only in their key's turn (else the dispatcher does, later). */
  ordering?: Ordering;
  /** A span per replayed delivery, linked to its receipt, and per handler run (`createTracing`); null: none. */
  tracing?: PodhookTracing | null;
  /** The schemas `podhook schemas` generated, applied as the dispatcher applies them. */
  payloadSchemas?: PayloadSchemaMap;
  /** Hides secrets in handlers' errors before they are logged or recorded (the handler runner's `redact`). */
  redact?: (text: string) => string;
}

/**
 * `succeeded`: every handler run succeeded; `failed`: one failed, or the body cannot be parsed;
 * `skipped`: no handler (or not the one named) takes the type; `busy`: a running dispatcher holds it;
 * `waiting`: an ordered handler's key is not free (another delivery of it runs or comes first): the
 * delivery is handed to the dispatcher, which runs that handler in its turn.
 */
export type ReplayOutcome = 'succeeded' | 'failed' | 'skipped' | 'busy' | 'waiting';

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
 * own handler runner. Unlike a dispatch it runs handlers that already succeeded (that is the
 * point), and it never schedules a retry. What it records, like one more dispatch attempt:
 * each run in the per-handler ledger; the delivery `processed` when every run succeeded (and no
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
  ordering,
  tracing = null,
  payloadSchemas,
  redact,
}: ReplayerOptions): Replayer {
  const runner = createHandlerRunner({ logger, clock, handlerTimeoutMs, tracing, redact });
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

    const ledger = await store.handlerRuns([leased.eventId]);
    // A delivery processed at its first attempt has no ledger rows: each handler ran once.
    const ranBefore = (name: string) =>
      ledger.find((r) => r.handler === name)?.attempts ?? (ledger.length === 0 && leased.status === 'processed' ? leased.attempts : 0);
    const attemptOf = (h: HandlerDefinition) => ranBefore(h.name) + 1;
    const payloadFor = typedPayloads(payloadSchemas, leased.eventType, body.payload);
    // Ordered handlers run in their key's turn only (no hold: a replayed delivery is not a burst).
    const steps = ordering?.active && handlers.some((h) => ordering.spec(h.name))
      ? await openOrderGate(store, { ...ordering, holdMs: 0 }, leased, body.payload, handlers, clock())
      : undefined;
    const runs = steps
      ? await runGateSteps(steps, leased, payloadFor, attemptOf, { runner, logger })
      : await Promise.all(handlers.map((h) => runner.run(h, leased, payloadFor(h), attemptOf(h))));
    const waits = steps?.flatMap((s) => (s.kind === 'wait' ? [s] : [])) ?? [];
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
    };
    let outcome: DispatchOutcome;
    if (lastError === null && waits.length > 0) {
      // Not its turn: the dispatcher runs the rest when the key is free (its settling wakes it).
      const next = Math.min(...waits.map((w) => w.until));
      outcome = { ...base, attempts: leased.attempts, status: 'queued', lastError: leased.lastError, nextAttemptAt: next };
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
    if (steps) {
      const ok = new Set(runs.filter((r) => r.ok).map((r) => r.handler));
      outcome.order = orderFinishes(steps, (name) => ok.has(name), outcome.status === 'dead', ordering!.holdMs);
    }
    await store.completeDispatch([outcome]);
    if (lastError === null && waits.length > 0) {
      const on = waits.map((w) => `${w.handler.name} waits for ${w.waitingOn ?? 'its turn'}`).join('; ');
      return result('waiting', `${on}: handed to the dispatcher, which runs it in its key's order`, outcome.status, runs);
    }
    return result(lastError === null ? 'succeeded' : 'failed', lastError, outcome.status, runs);
  }

  return { handlersFor, replay: tracing ? tracing.traceAttempt(replay, { name: SPAN.replay, owner, outcomeOf: (r) => r.outcome }) : replay };
}
