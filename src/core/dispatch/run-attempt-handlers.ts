import type { Delivery } from '../delivery.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Logger } from '../observability/logger.js';
import type { Redact } from '../observability/redact-secrets.js';
import { settleResult } from '../runner/handler-lines.js';
import type { CallWrapper, HandlerCall, HandlerRunner } from '../runner/handler-runner.js';
import type { GatePlan } from './attempt-gate.js';
import type { DispatchEvents } from './dispatch-events.js';
import type { HandlerResult } from './handler-result.js';
import { InvalidBodyError } from './parse-delivery-body.js';

export interface AttemptHandlers {
  /** The runs' results, and the results a gate settled without a run. */
  results: HandlerResult[];
  /** The earliest time a waiting handler is due again; undefined when none waits. */
  waitUntil?: number;
}

export interface RunAttemptHandlersOptions {
  delivery: Delivery;
  /** The body as ingest parsed it, when at hand (a hand-off). */
  parsed?: unknown;
  /** What the gate decided, or null: every pending handler runs. */
  plan: GatePlan | null;
  pending: readonly HandlerDefinition[];
  attemptOf: (handler: HandlerDefinition) => number;
  runner: Pick<HandlerRunner, 'run'>;
  /** Wraps each call (the instruments'). */
  wrap?: CallWrapper;
  events: DispatchEvents;
  now: () => number;
  /** The claim the attempt holds the delivery under (durable steps are fenced by it). */
  claimId: string;
  logger: Logger;
  /** Hides secrets in each result's error, once, before anything reads it. */
  redact: Redact;
}

/**
 * Runs an attempt's handlers as its gate planned them, as one job of the runner: each run
 * reported as `handlerStarted` and `handlerFinished` (its error redacted and its `handler run`
 * line written here, on the receiver), a settled one as `handlerFinished`, a wait as the time the
 * delivery is due again. The dispatcher and `podhook replay` run them alike. Throws an
 * `InvalidBodyError` when the runner could not parse the body.
 */
export async function runAttemptHandlers(o: RunAttemptHandlersOptions): Promise<AttemptHandlers> {
  const { delivery, plan, events } = o;
  const calls: HandlerCall[] = [];
  /** The results in the plan's order: a settled one where it stands, a run's filled in by the job. */
  const results: (HandlerResult | undefined)[] = [];
  let waitUntil: number | undefined;
  if (plan === null) for (const handler of o.pending) calls.push({ handler, attempt: o.attemptOf(handler) });
  else {
    for (const step of plan.steps) {
      if (step.kind === 'run') {
        calls.push({ handler: step.handler, attempt: o.attemptOf(step.handler), context: step.context });
        results.push(undefined);
      } else if (step.kind === 'settled') {
        events.emit('handlerFinished', step.handler.name, delivery.eventType, step.result.outcome, 0);
        results.push(step.result);
      } else waitUntil = Math.min(waitUntil ?? Infinity, step.until);
    }
  }
  if (calls.length > 0) {
    const lag = o.now() - delivery.receivedAt;
    for (const c of calls) events.emit('handlerStarted', c.handler.name, delivery.eventType, lag);
    const ran = await o.runner.run({ delivery, parsed: o.parsed, calls, claimId: o.claimId, wrap: o.wrap });
    if (ran.invalidBody !== undefined) throw new InvalidBodyError(ran.invalidBody);
    let next = 0;
    for (const r of ran.results) {
      settleResult(o.logger, o.redact, delivery, r);
      events.emit('handlerFinished', r.handler, delivery.eventType, r.outcome, r.durationMs);
      if (r.steps) events.emit('handlerSteps', r.handler, r.steps.succeeded, r.steps.failed, r.steps.replayed);
      // A run parked at a sleep waits too, until its wake time.
      if (r.waitUntil !== undefined) waitUntil = Math.min(waitUntil ?? Infinity, r.waitUntil);
      if (plan === null) results.push(r);
      else {
        while (results[next] !== undefined) next++;
        results[next] = r;
      }
    }
  }
  return waitUntil === undefined ? { results: results as HandlerResult[] } : { results: results as HandlerResult[], waitUntil };
}
