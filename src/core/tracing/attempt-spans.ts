import { context, createContextKey, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import type { Delivery } from '../delivery.js';
import type { DispatchSubscriber } from '../dispatch/dispatch-events.js';
import { ATTR, ATTR_ERROR_TYPE } from './names.js';
import { parseTraceParent } from './trace-parent.js';

/** The attempt a dispatcher is running in this context, so its observer can name the outcome. */
const ATTEMPT = createContextKey('podhook attempt');

interface AttemptState {
  outcome?: string;
}

export interface AttemptSpanOptions<R> {
  /** The span's name (`podhook.dispatch`, `podhook.replay`). */
  name: string;
  /** The dispatcher (lease owner) running it. */
  owner: string;
  /** How the attempt ended, from its result; otherwise what `attemptOutcomes` noted. */
  outcomeOf?: (result: R) => string;
}

/**
 * Runs each attempt of a stored delivery in a span of its own: a trace root (CONSUMER), linked
 * to the delivery's receipt (`traceParent`, stored with the row) rather than its child. An
 * attempt may come hours later, on another replica, after a restart or as an operator's replay:
 * as a root it is a short trace of its own that every backend keeps whole, and the link leads
 * from it to the receipt (and from the receipt to it, in backends that index links). Unrelated
 * deliveries leased by one poll never share a trace. The handler spans are its children.
 */
export function traceAttempt<A extends [Delivery, ...unknown[]], R>(
  tracer: Tracer,
  run: (...args: A) => Promise<R>,
  { name, owner, outcomeOf }: AttemptSpanOptions<R>,
): (...args: A) => Promise<R> {
  return function tracedAttempt(...args) {
    const [delivery] = args;
    const receipt = parseTraceParent(delivery.traceParent);
    const span = tracer.startSpan(
      name,
      {
        kind: SpanKind.CONSUMER,
        root: true,
        links: receipt ? [{ context: receipt }] : undefined,
        attributes: {
          [ATTR.eventId]: delivery.eventId,
          [ATTR.eventType]: delivery.eventType,
          [ATTR.attempt]: delivery.attempts + 1,
          [ATTR.dispatcher]: owner,
        },
      },
      ROOT_CONTEXT,
    );
    const state: AttemptState = {};
    const inSpan = trace.setSpan(ROOT_CONTEXT, span).setValue(ATTEMPT, state);
    return context.with(inSpan, () => run(...args)).then(
      (result) => {
        // No outcome noted: the handlers were interrupted (shutdown, a lost lease) and nothing was recorded.
        endAttempt(span, outcomeOf?.(result) ?? state.outcome ?? 'interrupted');
        return result;
      },
      (error: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute(ATTR_ERROR_TYPE, error instanceof Error ? error.name : 'unknown');
        endAttempt(span, 'error');
        throw error;
      },
    );
  };
}

function endAttempt(span: Span, outcome: string) {
  span.setAttribute(ATTR.outcome, outcome);
  if (outcome === 'failed' || outcome === 'dead') span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/**
 * Notes each attempt's outcome for its span: the status it recorded, or `lease_lost` when the
 * outcome write found another claim holding the delivery. Events are emitted inside the attempt's
 * context, so the active context says which attempt it was.
 */
export const attemptOutcomes: DispatchSubscriber = {
  deliveryFinished(_eventType, status) {
    note(status);
  },
  leaseLost() {
    // A renewal's loss is noted by no attempt (it runs outside them); the fenced write is.
    note('lease_lost');
  },
};

function note(outcome: string) {
  const state = context.active().getValue(ATTEMPT) as AttemptState | undefined;
  if (state) state.outcome = outcome;
}
