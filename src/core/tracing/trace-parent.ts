import { isSpanContextValid, isValidSpanId, isValidTraceId, TraceFlags, type SpanContext } from '@opentelemetry/api';

/**
 * A span context as W3C `traceparent` text (https://www.w3.org/TR/trace-context/#traceparent-header),
 * the form a delivery's receipt is stored in (`deliveries.trace_parent`). Written here rather than
 * through `propagation.inject`: `@opentelemetry/api` ships only the propagation facade, and the
 * stored text must not depend on which propagator (B3, Jaeger, none) a deployment registers.
 */
export function formatTraceParent(span: SpanContext): string | null {
  if (!isSpanContextValid(span)) return null;
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

const TRACE_PARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;

/**
 * The span context stored as `traceparent` text, marked remote (it was recorded by another
 * process, or this one before a restart); null for anything else: a row never fails for it.
 */
export function parseTraceParent(text: string | null | undefined): SpanContext | null {
  if (!text) return null;
  const m = TRACE_PARENT.exec(text);
  // Version ff is invalid; version 00 has exactly four fields (a later version may add more).
  if (!m || m[1] === 'ff' || (m[1] === '00' && text.length !== 55)) return null;
  const [, , traceId, spanId, flags] = m as unknown as [string, string, string, string, string];
  if (!isValidTraceId(traceId) || !isValidSpanId(spanId)) return null;
  return { traceId, spanId, traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
}
