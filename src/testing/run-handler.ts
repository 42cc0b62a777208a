import type { EventType } from '../core/events/event-types.js';
import type { HandlerDefinition, PodEvent } from '../core/events/define-handler.js';
import { createHandlerRunner, type HandlerOutcome } from '../core/dispatch/run-handler.js';
import { captureLogs, type LogLine } from './capture-logs.js';

export interface RunHandlerOptions {
  /** The call's time limit (default: the handler's own `timeoutMs`, else 30 s, as the dispatcher). */
  timeoutMs?: number;
}

export interface RunHandlerResult {
  /** Whether the dispatcher would record this run as a success. */
  ok: boolean;
  /** How the run ended, as the `handler run` log line says. */
  outcome: HandlerOutcome;
  /** What the handler threw; for a time limit or a payload its schema refused, an Error saying so. */
  error?: unknown;
  /** The handler's own log lines (not the dispatcher's `handler run` line). */
  logs: LogLine[];
  durationMs: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Runs one handler on one event through the dispatcher's own runner: the handler's schema, its
 * time limit with an AbortSignal, its log lines. Never throws for a failing handler.
 *
 * @example
 * const result = await runHandler(handler, testEvent('pod.created'));
 * expect(result.ok).toBe(true);
 */
export async function runHandler(
  handler: HandlerDefinition,
  event: PodEvent<EventType, unknown>,
  { timeoutMs }: RunHandlerOptions = {},
): Promise<RunHandlerResult> {
  const { logger, lines } = captureLogs();
  let thrown: { value: unknown } | undefined;
  const runner = createHandlerRunner({
    logger,
    clock: () => performance.now(),
    handlerTimeoutMs: timeoutMs ?? handler.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  });
  // The same definition, keeping what it threw (the runner records only its text).
  const watched: HandlerDefinition = {
    ...handler,
    timeoutMs: timeoutMs ?? handler.timeoutMs,
    handle: async (e, ctx) => {
      try {
        return await handler.handle(e, ctx);
      } catch (error) {
        thrown = { value: error };
        throw error;
      }
    },
  };
  const result = await runner.run({
    handler: watched,
    delivery: {
      eventId: event.id,
      eventType: event.type,
      signatureT: event.signatureTimestamp,
      body: event.rawBody,
      headers: {},
      receivedAt: event.receivedAt.getTime(),
      lastReceivedAt: event.receivedAt.getTime(),
      deliveryCount: 1,
      status: 'queued',
      attempts: event.attempt - 1,
      lastError: null,
      nextAttemptAt: null,
      processedAt: null,
    },
    payload: () => event.payload,
    attempt: event.attempt,
  });
  const { outcome, durationMs } = result;
  // The runner's own `handler run` line is always the last one.
  const logs = lines.at(-1)?.msg === 'handler run' ? lines.slice(0, -1) : lines;
  if (result.ok) return { ok: true, outcome, logs, durationMs };
  const error = outcome === 'failed' && thrown ? thrown.value : new Error(result.error ?? outcome);
  return { ok: false, outcome, error, logs, durationMs };
}
