import type { Clock } from '../clock.js';
import type { HandlerContext, HandlerDefinition, PodEvent } from '../events/define-handler.js';
import type { EventType } from '../events/event-types.js';
import type { Logger } from '../observability/logger.js';
import { eventOf } from '../events/event-of.js';
import type { HandlerOutcome, HandlerResult } from './handler-result.js';
import type { HandlerCall, HandlerRunner } from './handler-runner.js';
import { HandlerTimeoutError, RunningCall } from './running-call.js';
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
}

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
export function createHandlerRunner({ logger, clock, handlerTimeoutMs, redact }: HandlerRunnerOptions): HandlerRunner {
  /** Calls still running, each with how to end it early (time limit, shutdown). */
  const calls = new Set<RunningCall>();

  async function run({ handler: h, delivery, payload: payloadOf, attempt, context }: HandlerCall): Promise<HandlerResult> {
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
    try {
      // A handler that ignores its signal is no longer awaited after its time limit.
      const ctx: HandlerContext = { log, get signal() { return call.signal; }, ...context };
      await call.race(invoke(h, event, ctx));
      result.ok = true;
      report('succeeded');
    } catch (error) {
      result.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      if (error instanceof Error) result.errorName = error.name;
      result.interrupted = call.interrupted;
      report(call.interrupted ? 'interrupted' : error instanceof HandlerTimeoutError ? 'timeout' : 'failed');
    } finally {
      clearTimeout(timer);
      calls.delete(call);
    }
    return result;
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
