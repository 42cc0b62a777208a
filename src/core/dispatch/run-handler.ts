import type { Clock } from '../clock.js';
import type { HandlerContext, HandlerDefinition, PodEvent } from '../events/define-handler.js';
import type { Delivery } from '../delivery.js';
import type { HandlerRun } from '../delivery-store.js';
import type { EventType } from '../events/event-types.js';
import { eventOf } from '../order/ordering.js';
import type { OrderContext } from '../order/order-types.js';
import type { Logger } from '../observability/logger.js';
import type { PodhookTracing } from '../tracing/index.js';
import { describeIssues, RefusedPayload } from './typed-payload.js';

/** How one handler call ended. */
export type HandlerOutcome = 'succeeded' | 'failed' | 'timeout' | 'invalid_payload' | 'interrupted' | 'skipped';

/** Hooks for metrics around each handler call; every method optional. */
export interface HandlerObserver {
  /** A handler started: `lagMs` is the time from receipt to this start. */
  handlerStarted?(handler: string, eventType: string, lagMs: number): void;
  handlerFinished?(handler: string, eventType: string, outcome: HandlerOutcome, durationMs: number): void;
}

/** The result of one handler call. */
export interface HandlerResult {
  handler: string;
  attempt: number;
  ok: boolean;
  /** Retrying cannot help: the payload failed the handler's schema. */
  permanent: boolean;
  /** Ended by `abortAll` (shutdown) or `abortDelivery` (lease lost): the call did not finish, so it is no attempt at all. */
  interrupted: boolean;
  error: string | null;
  /** How long the call took (schema check included). */
  durationMs: number;
  /** How the call ended. */
  outcome: HandlerOutcome;
}

export interface HandlerRunnerOptions {
  logger: Logger;
  clock: Clock;
  /** Time limit per handler call, unless the handler sets its own. */
  handlerTimeoutMs: number;
  observer?: HandlerObserver;
  /** A span per handler run, the handler's code inside it (`createTracing`); null: none. */
  tracing?: PodhookTracing | null;
  /** Hides secrets in a handler's error before it is logged or recorded (`createSecretRedactor`). */
  redact?: (text: string) => string;
}

export interface HandlerRunner {
  /**
   * Runs one handler on one delivery's parsed payload (or the `RefusedPayload` its generated schema
   * made of it): schema check, time limit, log line. Never throws. An ordered handler gets its
   * place in its key's order as `ctx.order`.
   */
  run(handler: HandlerDefinition, delivery: Delivery, payload: unknown, attempt: number, order?: OrderContext): Promise<HandlerResult>;
  /** Aborts every call still running (shutdown); each settles at once as `interrupted`. */
  abortAll(reason: Error): void;
  /** Aborts the calls still running for one delivery (its lease was lost), as `abortAll` does. */
  abortDelivery(eventId: string, reason: Error): void;
}

class HandlerTimeoutError extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = 'HandlerTimeoutError';
  }
}

// ignoreBOM: false is the default, spelled out because workerd's typings require it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Parses a stored body as handlers see it: strict UTF-8, then JSON. */
export function parseDeliveryBody(body: Uint8Array): { ok: true; payload: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, payload: JSON.parse(utf8.decode(body)) };
  } catch (error) {
    return { ok: false, error: `invalid_json: ${(error as Error).message}` };
  }
}

/** How long an attempt's handlers ran: they run together, so the slowest one; null when none ran. */
export function attemptDuration(results: readonly HandlerResult[]): number | null {
  return results.length === 0 ? null : Math.max(...results.map((r) => r.durationMs));
}

/** The ledger rows of one attempt's results (each also a row of the run history). */
export function ledgerRuns(eventId: string, results: readonly HandlerResult[]): HandlerRun[] {
  return results.map((r) => ({
    eventId,
    handler: r.handler,
    status: r.outcome === 'skipped' ? 'skipped' : r.ok ? 'succeeded' : 'failed',
    attempts: r.attempt,
    lastError: r.error,
    durationMs: r.durationMs,
    // An interrupted run is no attempt: its outcome is never recorded.
    outcome: r.outcome === 'interrupted' ? 'failed' : r.outcome,
  }));
}

/** The stale runs ordered handlers skipped in one attempt, as one line: `handler: stale: skipped, newer event … already ran`. */
export function describeSkips(results: readonly HandlerResult[]): string | null {
  return results.filter((r) => r.outcome === 'skipped').map((r) => `${r.handler}: ${r.error}`).join('; ').slice(0, 2000) || null;
}

/** The failures of one attempt as one `last_error` line: `handler: error; handler: error`. */
export function describeFailures(results: readonly HandlerResult[]): string | null {
  if (results.every((r) => r.ok)) return null;
  return results
    .filter((r) => !r.ok)
    .map((f) => `${f.handler}: ${f.error}`)
    .join('; ')
    .slice(0, 2000) || null;
}

/** One handler call that may be ended early (time limit, shutdown); lean, as it runs per delivery. */
class RunningCall {
  constructor(readonly eventId: string) {}
  private reject: ((reason: Error) => void) | undefined;
  private controller: AbortController | undefined;
  private reason: Error | undefined;
  /** Ended by shutdown rather than by its time limit. */
  interrupted = false;

  /** Settles with the handler, or rejects once ended: a handler ignoring its signal is no longer awaited. */
  race<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.reason) return reject(this.reason);
      this.reject = reject;
      work.then(resolve, reject);
    });
  }

  /** Made only when read, as most handlers never read it. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  end(reason: Error, interrupted = false) {
    if (this.reason) return;
    this.reason = reason;
    this.interrupted = interrupted;
    this.controller?.abort(reason);
    this.reject?.(reason);
  }
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
 * Runs handler modules the way the dispatcher does (and `podhook replay` reuses): the handler's
 * schema first, then the call raced against its time limit with an `AbortSignal`, then one
 * `handler run` log line with its outcome and duration.
 */
export function createHandlerRunner({ logger, clock, handlerTimeoutMs, observer = {}, tracing = null, redact }: HandlerRunnerOptions): HandlerRunner {
  /** Calls still running, each with how to end it early (time limit, shutdown). */
  const calls = new Set<RunningCall>();

  async function run(h: HandlerDefinition, delivery: Delivery, payload: unknown, attempt: number, order?: OrderContext): Promise<HandlerResult> {
    const log = logger.child({ event_id: delivery.eventId, event_type: delivery.eventType, handler: h.name, attempt });
    const started = clock();
    const span = tracing?.startHandler(h.name, attempt, order?.stale);
    const timeoutMs = h.timeoutMs ?? handlerTimeoutMs;
    const result: HandlerResult = { handler: h.name, attempt, ok: false, permanent: false, interrupted: false, error: null, durationMs: 0, outcome: 'failed' };
    const report = (outcome: HandlerOutcome, error?: unknown) => {
      // Every error text is set before this, and every log line, ledger row and alert reads it after.
      if (redact && result.error !== null) result.error = redact(result.error);
      span?.end(outcome, error ?? result.error);
      const durationMs = clock() - started;
      result.durationMs = durationMs;
      result.outcome = outcome;
      observer.handlerFinished?.(h.name, delivery.eventType, outcome, durationMs);
      const line = { duration_ms: durationMs, outcome, ...(result.error ? { error: result.error } : {}) };
      if (outcome === 'succeeded') log.info(line, 'handler run');
      else log.warn(line, 'handler run');
    };

    let parsed: unknown = payload;
    if (payload instanceof RefusedPayload) {
      // Its type's generated schema refused the payload (typed-payload.ts).
      result.permanent = true;
      result.error = payload.error;
      report('invalid_payload');
      return result;
    }
    if (h.schema) {
      const check = h.schema.safeParse(payload);
      if (!check.success) {
        result.permanent = true;
        result.error = `invalid_payload: ${describeIssues(check.error)}`;
        report('invalid_payload');
        return result;
      }
      parsed = check.data;
    } else if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      result.permanent = true;
      result.error = 'invalid_payload: the body is not a JSON object';
      report('invalid_payload');
      return result;
    }

    const call = new RunningCall(delivery.eventId);
    calls.add(call);
    const timer = setTimeout(() => call.end(new HandlerTimeoutError(timeoutMs)), timeoutMs);
    const event = eventOf(delivery, parsed, attempt);
    observer.handlerStarted?.(h.name, delivery.eventType, started - delivery.receivedAt);
    try {
      // A handler that ignores its signal is no longer awaited after its time limit.
      const ctx = { log, get signal() { return call.signal; }, ...(order && { order }) };
      await call.race(span ? span.run(() => invoke(h, event, ctx)) : invoke(h, event, ctx));
      result.ok = true;
      report('succeeded');
    } catch (error) {
      result.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      result.interrupted = call.interrupted;
      report(call.interrupted ? 'interrupted' : error instanceof HandlerTimeoutError ? 'timeout' : 'failed', error);
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
