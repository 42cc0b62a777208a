// The OpenTelemetry SDK for Node, loaded only when the OTEL_* variables ask for traces
// (start-tracing.ts imports this module dynamically): a deployment without them loads none of it.
import { diag, DiagLogLevel, isSpanContextValid, TraceFlags, type Attributes, type Context, type Link, type SpanKind } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes, serviceInstanceIdDetector } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SamplingResult,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Logger } from '../core/observability/logger.js';
import { SPAN, type TracingConfig } from '../core/tracing/index.js';

/** The OpenTelemetry SDK this process started. */
export interface RunningTracing {
  /** Sends the spans still buffered and stops the SDK (at most FLUSH_TIMEOUT_MS). */
  shutdown(): Promise<void>;
}

/** How long shutdown waits for the last spans to be sent (TRACING_FLUSH_TIMEOUT_MS sets another). */
export const FLUSH_TIMEOUT_MS = 5_000;
/**
 * The longest one export takes, its retries included (the SDK's default is 10 s). Shorter than
 * FLUSH_TIMEOUT_MS, so the flush at shutdown ends within it whatever the collector does: one that
 * never answers held the process 10 s after SIGTERM, one that refuses 7.4 s (retries), because
 * the export outlived the flush's wait. OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT may only shorten it,
 * and so does a shorter flush (TRACING_FLUSH_TIMEOUT_MS): an export gets four fifths of it at most.
 */
export const EXPORT_TIMEOUT_MS = 4_000;
/** Export failures are logged at most this often (a collector that is down fails every batch). */
const EXPORT_ERROR_EVERY_MS = 60_000;

/**
 * Registers a NodeTracerProvider as the global one (with its AsyncLocalStorage context manager
 * and the W3C propagator, so a handler's instrumented calls join its span), a BatchSpanProcessor
 * per exporter (OTEL_BSP_* tune it), and the sampler asked for.
 */
export function startTracingSdk(config: TracingConfig, logger: Logger): RunningTracing {
  diag.setLogger(diagToLogger(logger), DiagLogLevel.WARN);
  const flushTimeoutMs = config.flushTimeoutMs ?? FLUSH_TIMEOUT_MS;
  const exporters: SpanExporter[] = config.exporters.map((name) =>
    name === 'otlp' ? new OTLPTraceExporter({ url: config.endpoint, timeoutMillis: exportTimeoutMs(process.env, flushTimeoutMs) }) : new StderrSpanExporter(),
  );
  // Defaults first; OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (envDetector) win over them.
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'podhook' }).merge(detectResources({ detectors: [serviceInstanceIdDetector, envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    sampler: buildSampler(config),
    spanProcessors: exporters.map((exporter) => new BatchSpanProcessor(exporter)),
  });
  provider.register();
  const url = new URL(config.endpoint);
  logger.info(
    {
      exporters: config.exporters,
      // Never the user info or query of the URL: they may carry credentials.
      ...(config.exporters.includes('otlp') ? { endpoint: `${url.origin}${url.pathname}` } : {}),
      service_name: resource.attributes[ATTR_SERVICE_NAME],
      sampler: config.sampler,
      ...(config.sampler.endsWith('traceidratio') ? { ratio: config.ratio } : {}),
    },
    'tracing on',
  );
  return {
    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      const flushed = await Promise.race([
        provider.shutdown().then(() => true, () => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), flushTimeoutMs).unref())),
      ]);
      clearTimeout(timer);
      if (!flushed) logger.warn({ timeout_ms: flushTimeoutMs }, 'tracing: the last spans could not be sent');
    },
  };
}

/**
 * EXPORT_TIMEOUT_MS (four fifths of a shorter flush timeout), or the SDK's own variable when it
 * asks for less (the SDK reads `process.env` itself).
 */
function exportTimeoutMs(env: NodeJS.ProcessEnv, flushTimeoutMs: number): number {
  const most = Math.min(EXPORT_TIMEOUT_MS, Math.floor((flushTimeoutMs * 4) / 5));
  const asked = Number(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT || env.OTEL_EXPORTER_OTLP_TIMEOUT);
  return Number.isFinite(asked) && asked > 0 ? Math.min(asked, most) : most;
}

/**
 * The sampler OTEL_TRACES_SAMPLER names. The `parentbased_*` ones also keep a delivery whole: an
 * attempt (a trace root linked to its receipt) follows its receipt's sampling decision, so with
 * a ratio every attempt of a sampled delivery is kept, and none of an unsampled one.
 */
export function buildSampler({ sampler, ratio }: Pick<TracingConfig, 'sampler' | 'ratio'>): Sampler {
  const root = sampler.endsWith('always_on') ? new AlwaysOnSampler() : sampler.endsWith('always_off') ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(ratio);
  return sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root: new FollowReceiptSampler(root) }) : root;
}

const ATTEMPT_SPANS = new Set<string>([SPAN.dispatch, SPAN.replay]);

/** For podhook's attempt spans with a receipt link: the receipt's decision; otherwise `root`'s. */
class FollowReceiptSampler implements Sampler {
  constructor(private readonly root: Sampler) {}

  shouldSample(context: Context, traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    const receipt = links[0]?.context;
    if (ATTEMPT_SPANS.has(name) && receipt && isSpanContextValid(receipt)) {
      return { decision: receipt.traceFlags & TraceFlags.SAMPLED ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD };
    }
    return this.root.shouldSample(context, traceId, name, kind, attributes, links);
  }

  toString(): string {
    return `FollowReceipt{${this.root.toString()}}`;
  }
}

/**
 * `OTEL_TRACES_EXPORTER=console`: one JSON line per span on stderr, so spans never mix with the
 * JSON log lines on stdout or a CLI command's report (the SDK's ConsoleSpanExporter prints
 * multi-line objects to stdout).
 */
class StderrSpanExporter implements SpanExporter {
  export(spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    for (const s of spans) {
      const { traceId, spanId } = s.spanContext();
      const line = {
        trace_id: traceId,
        span_id: spanId,
        parent_span_id: s.parentSpanContext?.spanId,
        name: s.name,
        kind: s.kind,
        start: new Date(s.startTime[0] * 1000 + s.startTime[1] / 1e6).toISOString(),
        duration_ms: s.duration[0] * 1000 + s.duration[1] / 1e6,
        status: s.status.code,
        attributes: s.attributes,
        events: s.events.map((e) => ({ name: e.name, attributes: e.attributes })),
        links: s.links.map((l) => ({ trace_id: l.context.traceId, span_id: l.context.spanId })),
      };
      process.stderr.write(`${JSON.stringify(line)}\n`);
    }
    done({ code: 0 });
  }

  async shutdown(): Promise<void> {}
}

/**
 * The SDK's own warnings and errors (an export that failed) as log lines, each kind at most once
 * per EXPORT_ERROR_EVERY_MS: a warning does not hide the export error that follows it.
 */
export function diagToLogger(logger: Logger, now: () => number = Date.now) {
  const write = (level: 'warn' | 'error') => {
    let last = -Infinity;
    return (message: string) => {
      const at = now();
      if (at - last < EXPORT_ERROR_EVERY_MS) return;
      last = at;
      logger[level]({ component: 'opentelemetry' }, `tracing: ${message}`);
    };
  };
  const ignore = () => {};
  return { error: write('error'), warn: write('warn'), info: ignore, debug: ignore, verbose: ignore };
}
