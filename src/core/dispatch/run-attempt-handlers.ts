import type { Delivery } from '../delivery.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { GatePlan } from './attempt-gate.js';
import type { DispatchEvents } from './dispatch-events.js';
import type { HandlerResult } from './handler-result.js';
import type { GateContext, RunHandler } from './handler-runner.js';

export interface AttemptHandlers {
  /** The runs' results, and the results a gate settled without a run. */
  results: HandlerResult[];
  /** The earliest time a waiting handler is due again; undefined when none waits. */
  waitUntil?: number;
}

export interface RunAttemptHandlersOptions {
  delivery: Delivery;
  /** What the gate decided, or null: every pending handler runs. */
  plan: GatePlan | null;
  pending: readonly HandlerDefinition[];
  /** The payload a handler gets (the generated schema's parse, or the body as parsed). */
  payloadFor: (handler: HandlerDefinition) => unknown;
  attemptOf: (handler: HandlerDefinition) => number;
  run: RunHandler;
  events: DispatchEvents;
  now: () => number;
  /** The claim the attempt holds the delivery under (durable steps are fenced by it). */
  claimId: string;
}

/**
 * Runs an attempt's handlers together, as its gate planned them: each run reported as
 * `handlerStarted` and `handlerFinished`, a settled one as `handlerFinished`, a wait as the time the
 * delivery is due again. The dispatcher and `podhook replay` run them alike.
 */
export async function runAttemptHandlers({ delivery, plan, pending, payloadFor, attemptOf, run, events, now, claimId }: RunAttemptHandlersOptions): Promise<AttemptHandlers> {
  const one = async (handler: HandlerDefinition, context?: GateContext): Promise<HandlerResult> => {
    events.emit('handlerStarted', handler.name, delivery.eventType, now() - delivery.receivedAt);
    const result = await run({ handler, delivery, payload: () => payloadFor(handler), attempt: attemptOf(handler), context, claimId });
    events.emit('handlerFinished', handler.name, delivery.eventType, result.outcome, result.durationMs);
    if (result.steps) events.emit('handlerSteps', handler.name, result.steps.succeeded, result.steps.failed, result.steps.replayed);
    return result;
  };
  let waitUntil: number | undefined;
  const waited = (results: HandlerResult[]): AttemptHandlers => {
    // A run parked at a sleep waits too, until its wake time.
    for (const r of results) if (r.waitUntil !== undefined) waitUntil = Math.min(waitUntil ?? Infinity, r.waitUntil);
    return waitUntil === undefined ? { results } : { results, waitUntil };
  };
  if (plan === null) return waited(await Promise.all(pending.map((h) => one(h))));
  const results = await Promise.all(
    plan.steps.flatMap((step): Promise<HandlerResult>[] => {
      if (step.kind === 'run') return [one(step.handler, step.context)];
      if (step.kind === 'settled') {
        events.emit('handlerFinished', step.handler.name, delivery.eventType, step.result.outcome, 0);
        return [Promise.resolve(step.result)];
      }
      waitUntil = Math.min(waitUntil ?? Infinity, step.until);
      return [];
    }),
  );
  return waited(results);
}
