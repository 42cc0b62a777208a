import { context, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { Redact } from '../observability/redact-secrets.js';
import { scrubError } from '../observability/scrub-error.js';
import type { HandlerResult } from '../dispatch/handler-result.js';
import type { CallWrapper } from '../runner/handler-runner.js';
import { ATTR, SPAN } from './names.js';

/**
 * Each handler run in a span of its own, a child of the active attempt span, with the handler's
 * code running in its context (the handler's own spans are its children). The exception event
 * quotes the handler's own error text, as `handler_attempts` and the logs do, with every secret
 * `redact` knows replaced, on one line, cut at 300 characters (`scrubError`, as alerts quote it);
 * never a stack.
 */
export function traceHandler(tracer: Tracer, redact: Redact): CallWrapper {
  return function tracedHandler(call, _delivery, run) {
    const parent = context.active();
    const stale = call.context?.order?.stale;
    const attributes = { [ATTR.handler]: call.handler.name, [ATTR.attempt]: call.attempt, ...(stale === undefined ? {} : { [ATTR.orderStale]: stale }) };
    const span = tracer.startSpan(SPAN.handler, { attributes }, parent);
    return context.with(trace.setSpan(parent, span), run).then((result) => {
      endHandlerSpan(span, result, redact);
      return result;
    });
  };
}

function endHandlerSpan(span: ReturnType<Tracer['startSpan']>, result: HandlerResult, redact: Redact) {
  const { outcome } = result;
  span.setAttribute(ATTR.outcome, outcome);
  if (outcome !== 'succeeded' && outcome !== 'skipped' && outcome !== 'parked') {
    const name = result.errorName ?? outcome;
    const text = result.error ?? outcome;
    const message = result.errorName && text.startsWith(`${result.errorName}: `) ? text.slice(result.errorName.length + 2) : text;
    span.recordException({ name, message: scrubError(message, redact) });
    // Interrupted (shutdown, a lost lease) is no failure of the handler's.
    if (outcome !== 'interrupted') span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
