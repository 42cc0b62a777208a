import { context, ProxyTracer, SpanStatusCode, trace, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { ATTR, ATTR_ERROR_TYPE, SPAN, TRACER_NAME } from './names.js';
import { parseTraceParent } from './trace-parent.js';

/** Wraps a durable step's function in a span. */
export type StepSpan = <T>(name: string, seq: number, fn: () => Promise<T>) => Promise<T>;

/**
 * A span per durable step, a child of the active span (the handler run's), or undefined when no
 * OpenTelemetry SDK is registered (then a step costs no tracing work at all). The step's own
 * calls are its children. Only the step's name and position are recorded: never its result.
 */
export function stepSpans(provider: TracerProvider = trace.getTracerProvider()): StepSpan | undefined {
  const tracer = provider.getTracer(TRACER_NAME);
  if (tracer instanceof ProxyTracer) return undefined;
  return stepSpan(tracer);
}

/** A span per durable step from `tracer`, a child of the active span. */
export function stepSpan(tracer: Tracer): StepSpan {
  return (name, seq, fn) => {
    const span = tracer.startSpan(SPAN.step, { attributes: { [ATTR.step]: name, [ATTR.stepSeq]: seq } });
    return context.with(trace.setSpan(context.active(), span), fn).then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute(ATTR_ERROR_TYPE, error instanceof Error ? error.name : 'unknown');
        span.end();
        throw error;
      },
    );
  };
}

/**
 * Links the active span (a wait's step span) to a delivery's receipt (its stored `traceparent`):
 * the event that ended a `ctx.waitForEvent`. Nothing without an SDK or a context.
 */
export function linkActiveSpan(traceParent: string | null | undefined): void {
  const receipt = parseTraceParent(traceParent);
  if (receipt) trace.getActiveSpan()?.addLink({ context: receipt });
}
