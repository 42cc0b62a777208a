// Traces through @opentelemetry/api (docs/tracing.md): spans for ingest, the store commit, each
// dispatch attempt and handler run, and the `traceparent` a delivery is stored with. Pure
// TypeScript on Web APIs: the Worker runs the same call sites (no-ops without an SDK).
export { createTracing, type PodhookTracing, type TracingOptions } from './tracing.js';
export type { HandlerSpan } from './handler-spans.js';
export type { AttemptSpanOptions } from './attempt-spans.js';
export { ATTR, SPAN, TRACER_NAME } from './names.js';
export { formatTraceParent, parseTraceParent } from './trace-parent.js';
export { parseTracingConfig, type TracingConfig, type TracesSampler } from './tracing-config.js';
