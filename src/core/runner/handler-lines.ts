import type { HandlerResult } from '../dispatch/handler-result.js';
import type { Logger } from '../observability/logger.js';
import { markRedacted } from '../observability/redact.js';
import { redactData, redactNothing, type Redact } from '../observability/redact-secrets.js';
import type { HandlerLine } from './handler-log.js';
import type { JobDelivery } from './handler-runner.js';

/** The fields every line of one call carries: which event, which handler, which run. */
export interface CallBindings {
  event_id: string;
  event_type: string;
  handler: string;
  attempt: number;
}

export const callBindings = (delivery: Pick<JobDelivery, 'eventId' | 'eventType'>, handler: string, attempt: number): CallBindings => ({
  event_id: delivery.eventId,
  event_type: delivery.eventType,
  handler,
  attempt,
});

/** Writes handler lines with the receiver's logger (the receiver's part of every handler line). */
export type LineWriter = (bindings: CallBindings, line: HandlerLine) => void;

/**
 * The receiver's writer of handler lines, in whichever thread the handler ran: every secret it
 * knows replaced at any depth of the fields and in the message, each field walked once (the
 * logger's own key rule is not applied again), the call's bindings last so a handler cannot
 * overwrite them.
 */
export function createLineWriter(logger: Logger, redact: Redact = redactNothing): LineWriter {
  return function writeHandlerLine(bindings, line) {
    const fields = markRedacted(Object.assign(redactData(line.fields, redact) as Record<string, unknown>, bindings));
    logger[line.level](fields, line.msg === undefined ? undefined : redact(line.msg));
  };
}

/**
 * A call's result as the receiver keeps it: its error redacted (once, here, before a log line,
 * ledger row, alert or span reads it), and its `handler run` line written.
 */
export function settleResult(logger: Logger, redact: Redact, delivery: Pick<JobDelivery, 'eventId' | 'eventType'>, result: HandlerResult): HandlerResult {
  if (result.error !== null) result.error = redact(result.error);
  const line = {
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    handler: result.handler,
    attempt: result.attempt,
    duration_ms: result.durationMs,
    outcome: result.outcome,
    ...(result.error ? { error: result.error } : {}),
  };
  if (result.outcome === 'succeeded') logger.info(line, 'handler run');
  else logger.warn(line, 'handler run');
  return result;
}
