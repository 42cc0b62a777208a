import { context, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { NewDelivery } from '../delivery.js';
import { isEventType } from '../events/event-types.js';
import type { IngestOutcome } from '../ingest/ingest-outcome.js';
import { ATTR, ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE } from './names.js';
import { formatTraceParent } from './trace-parent.js';

/**
 * One SERVER span per ingest request (`POST <route>`), active while the request is received, so
 * the store commit is its child and the delivery stores its context. Its parent is whatever
 * context is active (none, unless the team added HTTP instrumentation): the sender's own
 * `traceparent` header is unauthenticated input and is never read.
 */
export function traceIngest<Q, A extends { status: number }>(tracer: Tracer, ingest: (request: Q) => Promise<A>, route: string): (request: Q) => Promise<A> {
  const name = `POST ${route}`;
  const options = { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: 'POST', [ATTR_HTTP_ROUTE]: route } };
  return function tracedIngest(request) {
    return tracer.startActiveSpan(name, options, async (span) => {
      try {
        const answer = await ingest(request);
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, answer.status);
        // HTTP server conventions: a 4xx is the client's doing, not an error of this span.
        if (answer.status >= 500) {
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.setAttribute(ATTR_ERROR_TYPE, String(answer.status));
          // The one answer no outcome reports: an error podhook did not expect.
          if (answer.status === 500) span.setAttribute(ATTR.outcome, 'internal_error');
        }
        return answer;
      } finally {
        span.end();
      }
    });
  };
}

/**
 * Puts an ingest answer's outcome on the active ingest span: the event id and type and how it
 * ended, then passes it on. A refused request's type is recorded only when it is a known event
 * type: the header is unauthenticated text.
 */
export function observeIngest(next?: (outcome: IngestOutcome) => void): (outcome: IngestOutcome) => void {
  return function observed(o) {
    const span = trace.getActiveSpan();
    if (span) {
      const refused = o.outcome === 'rejected';
      span.setAttribute(ATTR.outcome, o.outcome === 'accepted' ? 'new' : refused ? (o.reason ?? 'rejected') : o.outcome);
      if (o.eventId) span.setAttribute(ATTR.eventId, o.eventId);
      if (o.eventType && (!refused || isEventType(o.eventType))) span.setAttribute(ATTR.eventType, o.eventType);
    }
    next?.(o);
  };
}

/**
 * Wraps a store write of a new delivery (the claim, the quarantine) in a child span of the active
 * ingest span, and hands the store the ingest span's context as the delivery's `traceParent`:
 * every later attempt links to it. The span is not made active: a group commit writes the claims
 * of many requests at once, so a database client's span under it would belong to whichever
 * request happened to start the batch.
 */
export function traceStoreWrite<R extends { outcome: string }, X extends unknown[]>(
  tracer: Tracer,
  name: string,
  write: (delivery: NewDelivery, ...rest: X) => Promise<R>,
): (delivery: NewDelivery, ...rest: X) => Promise<R> {
  return async function tracedWrite(delivery, ...rest) {
    const parent = context.active();
    const ingest = trace.getSpan(parent);
    const receipt = ingest ? formatTraceParent(ingest.spanContext()) : null;
    const span = tracer.startSpan(name, { attributes: { [ATTR.eventId]: delivery.eventId } }, parent);
    try {
      const result = await write(receipt ? { ...delivery, traceParent: receipt } : delivery, ...rest);
      span.setAttribute(ATTR.outcome, result.outcome);
      return result;
    } catch (error) {
      // The kind of failure only: a driver's message may quote the values it was given.
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute(ATTR_ERROR_TYPE, errorType(error));
      throw error;
    } finally {
      span.end();
    }
  };
}

function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code !== '') return code;
  return error instanceof Error ? error.name : 'unknown';
}
