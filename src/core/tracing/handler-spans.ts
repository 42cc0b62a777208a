import { context, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { Redact } from '../observability/redact-secrets.js';
import { scrubError } from '../observability/scrub-error.js';
import { ATTR, SPAN } from './names.js';

/** One handler run's span: started before its schema check, ended with its outcome. */
export interface HandlerSpan {
  /** Runs the handler's own code in the span's context: its instrumented calls are children. */
  run<T>(fn: () => T): T;
  /** Ends the span; a failure adds an exception event with the error's type and its scrubbed message. */
  end(outcome: string, error?: unknown): void;
}

/**
 * A child of the active attempt span for one handler run. The exception event quotes the
 * handler's own error text, as `handler_attempts` and the logs do, with every secret `redact`
 * knows replaced, on one line, cut at 300 characters (`scrubError`, as alerts quote it); never a stack.
 */
export function startHandlerSpan(tracer: Tracer, redact: Redact, handler: string, attempt: number, stale?: boolean): HandlerSpan {
  const parent = context.active();
  const attributes = { [ATTR.handler]: handler, [ATTR.attempt]: attempt, ...(stale === undefined ? {} : { [ATTR.orderStale]: stale }) };
  const span = tracer.startSpan(SPAN.handler, { attributes }, parent);
  const inSpan = trace.setSpan(parent, span);
  return {
    run: (fn) => context.with(inSpan, fn),
    end(outcome, error) {
      span.setAttribute(ATTR.outcome, outcome);
      if (outcome !== 'succeeded') {
        const name = error instanceof Error ? error.name : outcome;
        const message = error instanceof Error ? error.message : String(error ?? outcome);
        span.recordException({ name, message: scrubError(message, redact) });
        // Interrupted (shutdown, a lost lease) is no failure of the handler's.
        if (outcome !== 'interrupted') span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}
