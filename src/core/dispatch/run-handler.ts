import type { Clock } from '../clock.js';
import type { HandlerContext, HandlerDefinition, PodEvent } from '../events/define-handler.js';
import type { EventType } from '../events/event-types.js';
import type { Logger } from '../observability/logger.js';
import { eventOf } from '../events/event-of.js';
import type { HandlerOutcome, HandlerResult } from './handler-result.js';
import type { HandlerCall, HandlerRunner } from './handler-runner.js';
import { HandlerTimeoutError, RunningCall } from './running-call.js';
import { RunContext } from './run-context.js';
import { HandlerSteps, RunParked, StepError, type StepJournals, type StepSeal } from '../steps/index.js';
import { describeIssues, RefusedPayload } from './typed-payload.js';

export type { HandlerOutcome, HandlerResult } from './handler-result.js';
export type { HandlerCall, HandlerRunner } from './handler-runner.js';

export interface HandlerRunnerOptions {
  logger: Logger;
  clock: Clock;
  /** Time limit per handler call, unless the handler sets its own. */
  handlerTimeoutMs: number;
  /** Hides secrets in a handler's error before it is logged or recorded (`createSecretRedactor`). */
  redact?: (text: string) => string;
  /** Durable steps (`ctx.step`, `ctx.sleep`): where each run's steps are kept, and the seal of sensitive results. */
  steps?: RunnerSteps;
}

/** What a runner needs for handlers' durable steps. */
export interface RunnerSteps {
  journals: StepJournals;
  seal: StepSeal;
  /** Wraps each step's function (a span under the handler's). */
  span?: <T>(name: string, seq: number, fn: () => Promise<T>) => Promise<T>;
}

const NO_JOURNAL = {
  load: () => Promise.reject(new StepError('step_failed', 'durable steps need a store: this runner has none (the test kit: pass `steps` to runHandler)', true)),
  save: () => Promise.reject(new Error('no step journal')),
};

const NO_SEAL: StepSeal = {
  seal: () => Promise.reject(new StepError('step_key_missing', 'this runner has no seal for sensitive steps', true)),
  open: () => Promise.reject(new StepError('step_key_missing', 'this runner has no seal for sensitive steps', true)),
};

/** Calls a handler; a synchronous throw becomes a rejection. */
function invoke(h: HandlerDefinition, event: PodEvent<EventType, unknown>, ctx: HandlerContext): Promise<unknown> {
  try {
    return Promise.resolve(h.handle(event, ctx));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Runs handler modules in this thread, the way the dispatcher does (and `podhook replay` and the
 * test kit reuse): the handler's schema first, then the call raced against its time limit with an
 * `AbortSignal`, then one `handler run` log line with its outcome and duration.
 */
export function createHandlerRunner({ logger, clock, handlerTimeoutMs, redact, steps }: HandlerRunnerOptions): HandlerRunner {
  /** Calls still running, each with how to end it early (time limit, shutdown). */
  const calls = new Set<RunningCall>();

  async function run({ handler: h, delivery, payload: payloadOf, attempt, context, claimId }: HandlerCall): Promise<HandlerResult> {
    const log = logger.child({ event_id: delivery.eventId, event_type: delivery.eventType, handler: h.name, attempt });
    const started = clock();
    const timeoutMs = h.timeoutMs ?? handlerTimeoutMs;
    const result: HandlerResult = { handler: h.name, attempt, ok: false, permanent: false, interrupted: false, error: null, durationMs: 0, outcome: 'failed' };
    const report = (outcome: HandlerOutcome) => {
      // Every error text is set before this, and every log line, ledger row and alert reads it after.
      if (redact && result.error !== null) result.error = redact(result.error);
      result.durationMs = clock() - started;
      result.outcome = outcome;
      const line = { duration_ms: result.durationMs, outcome, ...(result.error ? { error: result.error } : {}) };
      if (outcome === 'succeeded') log.info(line, 'handler run');
      else log.warn(line, 'handler run');
      return result;
    };
    const refuse = (error: string) => {
      result.permanent = true;
      result.error = error;
      return report('invalid_payload');
    };

    const payload = payloadOf();
    let parsed: unknown = payload;
    // Its type's generated schema refused the payload (typed-payload.ts).
    if (payload instanceof RefusedPayload) return refuse(payload.error);
    if (h.schema) {
      const check = h.schema.safeParse(payload);
      if (!check.success) return refuse(`invalid_payload: ${describeIssues(check.error)}`);
      parsed = check.data;
    } else if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      return refuse('invalid_payload: the body is not a JSON object');
    }

    const call = new RunningCall(delivery.eventId);
    calls.add(call);
    const timer = setTimeout(() => call.end(new HandlerTimeoutError(timeoutMs)), timeoutMs);
    const event = eventOf(delivery, parsed, attempt);
    const makeSteps = () =>
      new HandlerSteps({
        eventId: delivery.eventId,
        handler: h.name,
        journal: steps ? steps.journals({ eventId: delivery.eventId, handler: h.name, claimId: claimId ?? '' }) : NO_JOURNAL,
        clock,
        seal: steps?.seal ?? NO_SEAL,
        redact,
        span: steps?.span,
      });
    // A handler that ignores its signal is no longer awaited after its time limit.
    const ctx = new RunContext(log, () => call.signal, makeSteps, context);
    let failed: HandlerOutcome = 'failed';
    try {
      await call.race(invoke(h, event, ctx));
      result.ok = true;
    } catch (error) {
      result.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      if (error instanceof Error) result.errorName = error.name;
      result.interrupted = call.interrupted;
      if (call.interrupted) failed = 'interrupted';
      else if (error instanceof HandlerTimeoutError) failed = 'timeout';
      // A step that cannot work on another run (a changed handler, a result that is not JSON) makes the delivery dead.
      if (error instanceof StepError && error.permanent) result.permanent = true;
      if (error instanceof RunParked && !ctx.steps) result.error = 'RunParked: thrown outside a sleep';
    } finally {
      clearTimeout(timer);
      calls.delete(call);
      ctx.end();
    }
    const tally = ctx.steps?.tally;
    if (tally) {
      result.steps = { succeeded: tally.succeeded, failed: tally.failed, replayed: tally.replayed };
      if (tally.failedAttempt !== undefined && !result.ok) result.stepAttempt = tally.failedAttempt;
    }
    // Parked at a sleep (whatever the handler did with the throw): no attempt, due again at its wake time.
    if (tally?.parkedUntil !== undefined && !result.interrupted) {
      Object.assign(result, { ok: false, error: null, errorName: undefined, permanent: false, waitUntil: tally.parkedUntil });
      return report('parked');
    }
    return report(result.ok ? 'succeeded' : failed);
  }

  return {
    run,
    abortAll(reason) {
      for (const call of calls) call.end(reason, true);
    },
    abortDelivery(eventId, reason) {
      for (const call of calls) if (call.eventId === eventId) call.end(reason, true);
    },
  };
}
