import { ProxyTracer, trace, type TracerProvider } from '@opentelemetry/api';
import { redactNothing, type Redact } from '../observability/redact-secrets.js';
import type { ClaimResult, Delivery, NewDelivery, QuarantineResult } from '../delivery.js';
import type { DispatchObserver } from '../dispatch/dispatch-observer.js';
import type { IngestOutcome } from '../ingest/ingest-outcome.js';
import { observeAttempts, traceAttempt, type AttemptSpanOptions } from './attempt-spans.js';
import { startHandlerSpan, type HandlerSpan } from './handler-spans.js';
import { observeIngest, traceIngest, traceStoreWrite } from './ingest-spans.js';
import { SPAN, TRACER_NAME } from './names.js';

export interface TracingOptions {
  /** Where spans go: the global provider an OpenTelemetry SDK registers, unless given. */
  provider?: TracerProvider;
  /** Hides every secret in a handler's error on its span (`createSecretRedactor`: signing secrets, stored ones, tokens). */
  redact?: Redact;
}

/**
 * podhook's spans, through `@opentelemetry/api` only. Each method wraps one step, so a call
 * site is a line: `tracing ? tracing.x(step) : step`.
 */
export interface PodhookTracing {
  /** A SERVER span per ingest request, active while it runs. */
  traceIngest<Q, A extends { status: number }>(ingest: (request: Q) => Promise<A>, route: string): (request: Q) => Promise<A>;
  /** Puts each ingest outcome (event id and type, how it ended) on its request's span, then calls `next`. */
  observeIngest(next?: (outcome: IngestOutcome) => void): (outcome: IngestOutcome) => void;
  /** The store commit under the ingest span; the delivery is stored with the ingest span's context. */
  traceClaim(claim: (delivery: NewDelivery) => Promise<ClaimResult>): (delivery: NewDelivery) => Promise<ClaimResult>;
  /** The quarantine of a conflict under the ingest span, stored with its context as a claim is. */
  traceQuarantine(
    quarantine: (delivery: NewDelivery, alternateId: string) => Promise<QuarantineResult>,
  ): (delivery: NewDelivery, alternateId: string) => Promise<QuarantineResult>;
  /** A root span per attempt of a stored delivery, linked to its receipt; the handlers run inside it. */
  traceAttempt<A extends [Delivery, ...unknown[]], R>(run: (...args: A) => Promise<R>, options: AttemptSpanOptions<R>): (...args: A) => Promise<R>;
  /** The dispatcher's observer, also noting each attempt's outcome on its span. */
  observeAttempts(observer: DispatchObserver): DispatchObserver;
  /** A span for one handler run, a child of the active attempt. */
  /** A handler run's span (an ordered handler's says whether the event was stale). */
  startHandler(handler: string, attempt: number, stale?: boolean): HandlerSpan;
}

/**
 * podhook's tracing, or null when no OpenTelemetry SDK is registered: then the API would hand out
 * spans that record nothing, and podhook does no tracing work at all (each call site is one null
 * check, and no delivery stores a `trace_parent`). Register the SDK before wiring the receiver.
 */
export function createTracing({ provider = trace.getTracerProvider(), redact = redactNothing }: TracingOptions = {}): PodhookTracing | null {
  const tracer = provider.getTracer(TRACER_NAME);
  // The API's global provider is a proxy: it hands out its own ProxyTracer until an SDK is registered.
  if (tracer instanceof ProxyTracer) return null;
  return {
    traceIngest: (ingest, route) => traceIngest(tracer, ingest, route),
    observeIngest,
    traceClaim: (claim) => traceStoreWrite(tracer, SPAN.claim, claim),
    traceQuarantine: (quarantine) => traceStoreWrite(tracer, SPAN.quarantine, quarantine),
    traceAttempt: (run, options) => traceAttempt(tracer, run, options),
    observeAttempts,
    startHandler: (handler, attempt, stale) => startHandlerSpan(tracer, redact, handler, attempt, stale),
  };
}
