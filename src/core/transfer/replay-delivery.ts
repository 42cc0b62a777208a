import { systemClock, type Clock } from '../clock.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Delivery, DeliveryStatus, DeliveryStore, DispatchOutcome } from '../delivery-store.js';
import type { Logger } from '../observability/logger.js';
import type { Router } from '../dispatch/router.js';
import { attemptDuration, createHandlerRunner, describeFailures, ledgerRuns, parseDeliveryBody, type HandlerResult } from '../dispatch/run-handler.js';
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
  /** The schemas `podhook schemas` generated, applied as the dispatcher applies them. */
  payloadSchemas?: PayloadSchemaMap;
}

/**
 * `succeeded`: every handler run succeeded; `failed`: one failed, or the body cannot be parsed;
 * `skipped`: no handler (or not the one named) takes the type; `busy`: a running dispatcher holds it.
 */
export type ReplayOutcome = 'succeeded' | 'failed' | 'skipped' | 'busy';

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
  payloadSchemas,
}: ReplayerOptions): Replayer {
  const runner = createHandlerRunner({ logger, clock, handlerTimeoutMs });
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
    const payloadFor = typedPayloads(payloadSchemas, leased.eventType, body.payload);
    const runs = await Promise.all(handlers.map((h) => runner.run(h, leased, payloadFor(h), ranBefore(h.name) + 1)));
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
    if (lastError !== null) {
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
    await store.completeDispatch([outcome]);
    return result(lastError === null ? 'succeeded' : 'failed', lastError, outcome.status, runs);
  }

  return { handlersFor, replay };
}
