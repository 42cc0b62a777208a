// Traces through @opentelemetry/api (docs/tracing.md): spans for ingest, the store commit, each
// dispatch attempt and handler run, and the `traceparent` a delivery is stored with. Pure
// TypeScript on Web APIs: the Worker runs the same code (no instrument without an SDK). Tracing
// depends on what it observes (dispatch's events and instruments), never the other way around.
export { createTracing, type PodhookTracing, type TracingOptions } from './tracing.js';
export type { AttemptSpanOptions } from './attempt-spans.js';
export { ATTR, SPAN, TRACER_NAME } from './names.js';
export { stepSpans, type StepSpan } from './step-spans.js';
export { formatTraceParent, parseTraceParent } from './trace-parent.js';
export { parseTracingConfig, type TracingConfig, type TracesSampler } from './tracing-config.js';
