import { z } from 'zod';
import { ConfigError } from '../errors.js';

export const TRACES_SAMPLERS = ['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio'] as const;
export type TracesSampler = (typeof TRACES_SAMPLERS)[number];

const EXPORTERS = ['otlp', 'console', 'none'] as const;
/** Where an OpenTelemetry Collector (or Jaeger) takes OTLP/HTTP, when no endpoint is set. */
export const DEFAULT_TRACES_ENDPOINT = 'http://localhost:4318/v1/traces';

/** The tracing a Node process starts (`startTracing`), from the standard OpenTelemetry variables. */
export interface TracingConfig {
  /** `otlp`: OTLP/HTTP (JSON) to `endpoint`; `console`: one JSON line per span on stderr. */
  exporters: ReadonlyArray<'otlp' | 'console'>;
  /** The OTLP/HTTP traces URL (`…/v1/traces`). */
  endpoint: string;
  sampler: TracesSampler;
  /** The ratio of the `*traceidratio` samplers (`OTEL_TRACES_SAMPLER_ARG`, default 1). */
  ratio: number;
  /** How long shutdown waits for the last spans (`TRACING_FLUSH_TIMEOUT_MS`); unset: the SDK module's FLUSH_TIMEOUT_MS. */
  flushTimeoutMs?: number;
}

/** Unset and empty both mean "not set". */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const url = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

const TracingSchema = z.object({
  OTEL_SDK_DISABLED: optional(z.enum(['true', 'false'], { error: 'must be true or false' })),
  OTEL_TRACES_EXPORTER: optional(
    z
      .string()
      .transform((v) => v.split(',').map((e) => e.trim()))
      .pipe(z.array(z.enum(EXPORTERS, { error: `podhook exports to ${EXPORTERS.join(', ')} (comma-separated)` }))),
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(url),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional(url),
  // gRPC's port (4317) does not speak HTTP: the exporter would fail on every batch.
  OTEL_EXPORTER_OTLP_PROTOCOL: optional(z.enum(['http/json', 'http/protobuf'], { error: 'must be http/json or http/protobuf: podhook sends OTLP over HTTP (JSON), to port 4318' })),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: optional(z.enum(['http/json', 'http/protobuf'], { error: 'must be http/json or http/protobuf: podhook sends OTLP over HTTP (JSON), to port 4318' })),
  // Read by the SDK's resource detector (beside OTEL_RESOURCE_ATTRIBUTES); only checked here.
  OTEL_SERVICE_NAME: optional(z.string().trim().min(1, 'must not be blank')),
  OTEL_TRACES_SAMPLER: optional(z.enum(TRACES_SAMPLERS, { error: `must be one of ${TRACES_SAMPLERS.join(', ')}` })),
  OTEL_TRACES_SAMPLER_ARG: optional(
    z
      .string()
      .transform(Number)
      .pipe(z.number({ error: 'must be a number from 0 to 1' }).min(0, 'must be a number from 0 to 1').max(1, 'must be a number from 0 to 1')),
  ),
  // podhook's own: how long shutdown waits for the last spans to be sent.
  TRACING_FLUSH_TIMEOUT_MS: optional(
    z
      .string()
      .regex(/^\d+$/, 'must be a whole number from 100 to 60000')
      .transform(Number)
      .pipe(z.number().int().min(100, 'must be at least 100').max(60_000, 'must be at most 60000')),
  ),
});

/** Variables never echoed in an error: an endpoint may carry credentials in its user info or query. */
const UNSHOWN = new Set(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);

/**
 * Validates the OpenTelemetry variables. Returns null when tracing stays off: no exporter
 * asked for (`OTEL_TRACES_EXPORTER` unset, or `none`) and no OTLP endpoint set, or
 * `OTEL_SDK_DISABLED=true`. Throws a ConfigError naming the variable (exit code 2).
 * @example parseTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })
 * // → { exporters: ['otlp'], endpoint: 'http://127.0.0.1:4318/v1/traces', sampler: 'parentbased_always_on', ratio: 1 }
 */
export function parseTracingConfig(env: Record<string, string | undefined>): TracingConfig | null {
  const parsed = TracingSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    const shown = UNSHOWN.has(name) ? '' : ` (got ${JSON.stringify(env[name])})`;
    throw new ConfigError(`invalid configuration: ${name} ${issue.message}${shown}`);
  }
  const e = parsed.data;
  if (e.OTEL_SDK_DISABLED === 'true') return null;
  const named = e.OTEL_TRACES_EXPORTER;
  if (named?.includes('none') && named.length > 1) throw new ConfigError('invalid configuration: OTEL_TRACES_EXPORTER none cannot be combined with an exporter');
  const endpointSet = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined || e.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined;
  const exporters = named ? named.filter((x) => x !== 'none') : endpointSet ? ['otlp' as const] : [];
  if (exporters.length === 0) return null;
  const sampler = e.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on';
  return {
    exporters: [...new Set(exporters)] as TracingConfig['exporters'],
    endpoint: e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (e.OTEL_EXPORTER_OTLP_ENDPOINT ? tracesUrl(e.OTEL_EXPORTER_OTLP_ENDPOINT) : DEFAULT_TRACES_ENDPOINT),
    sampler,
    ratio: e.OTEL_TRACES_SAMPLER_ARG ?? 1,
    ...(e.TRACING_FLUSH_TIMEOUT_MS !== undefined && { flushTimeoutMs: e.TRACING_FLUSH_TIMEOUT_MS }),
  };
}

/** The signal's path under a base endpoint (OTLP exporter spec: append `v1/traces`). */
function tracesUrl(base: string): string {
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}
