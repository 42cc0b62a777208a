import type { Logger } from '../core/observability/logger.js';
import { parseTracingConfig } from '../core/tracing/index.js';
// A type only: erased, so the SDK is still loaded by the import() below alone.
import type { RunningTracing } from './tracing-sdk.js';

export type { RunningTracing };

/**
 * Starts OpenTelemetry tracing when the standard variables ask for it (OTEL_EXPORTER_OTLP_ENDPOINT,
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER; docs/tracing.md), before the
 * receiver or dispatcher is wired, so podhook's spans reach it. Resolves null when they do not:
 * then the SDK is never loaded. Throws a ConfigError (exit 2) for an invalid variable.
 */
export async function startTracing(env: Record<string, string | undefined>, logger: Logger): Promise<RunningTracing | null> {
  const config = parseTracingConfig(env);
  if (config === null) return null;
  const { startTracingSdk } = await import('./tracing-sdk.js');
  return startTracingSdk(config, logger);
}
