import { ProxyTracer, trace, type TracerProvider } from '@opentelemetry/api';
import { redactNothing, type Redact } from '../observability/redact-secrets.js';
import type { DispatchInstrument } from '../dispatch/dispatch-instrument.js';
import type { IngestInstrument } from '../ingest/ingest-instrument.js';
import { attemptOutcomes, traceAttempt } from './attempt-spans.js';
import { traceHandler } from './handler-spans.js';
import { observeIngest, traceIngest, traceStoreWrite } from './ingest-spans.js';
import { SPAN, TRACER_NAME } from './names.js';
import { stepSpan } from './step-spans.js';

export interface TracingOptions {
  /** Where spans go: the global provider an OpenTelemetry SDK registers, unless given. */
  provider?: TracerProvider;
  /** Hides every secret in a handler's error on its span (`createSecretRedactor`: signing secrets, stored ones, tokens). */
  redact?: Redact;
}

/** podhook's spans, through `@opentelemetry/api` only: ingest's steps, and an instrument for dispatch and replay. */
export interface PodhookTracing {
  /** Ingest's instrument: a SERVER span per request, the store commit under it, the outcome on it. */
  readonly ingest: Required<IngestInstrument>;
  /**
   * Dispatch's instrument: a root span per attempt of a stored delivery (`name`: `podhook.dispatch`
   * or `podhook.replay`), linked to its receipt, with its outcome; a child span per handler run,
   * and one per durable step under it.
   */
  dispatch(options: { name: string; owner: string }): DispatchInstrument;
}

/**
 * podhook's tracing, or null when no OpenTelemetry SDK is registered: then the API would hand out
 * spans that record nothing, and podhook does no tracing work at all (no instrument is installed,
 * and no delivery stores a `trace_parent`). Register the SDK before wiring the receiver.
 */
export function createTracing({ provider = trace.getTracerProvider(), redact = redactNothing }: TracingOptions = {}): PodhookTracing | null {
  const tracer = provider.getTracer(TRACER_NAME);
  // The API's global provider is a proxy: it hands out its own ProxyTracer until an SDK is registered.
  if (tracer instanceof ProxyTracer) return null;
  return {
    ingest: {
      request: (ingest, route) => traceIngest(tracer, ingest, route),
      outcome: observeIngest,
      claim: (claim) => traceStoreWrite(tracer, SPAN.claim, claim),
      quarantine: (quarantine) => traceStoreWrite(tracer, SPAN.quarantine, quarantine),
    },
    dispatch: ({ name, owner }) => ({
      subscriber: attemptOutcomes,
      attempt: (run, outcomeOf) => traceAttempt(tracer, run, { name, owner, outcomeOf }),
      call: traceHandler(tracer, redact),
      step: stepSpan(tracer),
    }),
  };
}
