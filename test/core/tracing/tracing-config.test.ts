import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/core/errors.js';
import { DEFAULT_TRACES_ENDPOINT, parseTracingConfig } from '../../../src/core/tracing/tracing-config.js';

describe('the OpenTelemetry variables', () => {
  it('leave tracing off when none asks for an exporter', () => {
    expect(parseTracingConfig({})).toBeNull();
    expect(parseTracingConfig({ OTEL_SERVICE_NAME: 'hooks', OTEL_TRACES_SAMPLER: 'always_on' })).toBeNull();
    expect(parseTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(parseTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(parseTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeNull();
  });

  it('turn on OTLP with an endpoint: the base one gets /v1/traces, the traces one is taken as is', () => {
    expect(parseTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toEqual({
      exporters: ['otlp'],
      endpoint: 'http://collector:4318/v1/traces',
      sampler: 'parentbased_always_on',
      ratio: 1,
    });
    expect(
      parseTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b.example/otlp/traces' })?.endpoint,
    ).toBe('https://b.example/otlp/traces');
    expect(parseTracingConfig({ OTEL_TRACES_EXPORTER: 'otlp' })?.endpoint).toBe(DEFAULT_TRACES_ENDPOINT);
  });

  it('take the exporters and sampler asked for', () => {
    expect(
      parseTracingConfig({ OTEL_TRACES_EXPORTER: 'console, otlp', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }),
    ).toMatchObject({ exporters: ['console', 'otlp'], sampler: 'parentbased_traceidratio', ratio: 0.25 });
  });

  it('take a flush timeout from TRACING_FLUSH_TIMEOUT_MS, and none when it is unset (the SDK keeps its 5 s)', () => {
    expect(parseTracingConfig({ OTEL_TRACES_EXPORTER: 'console', TRACING_FLUSH_TIMEOUT_MS: '1500' })).toMatchObject({ flushTimeoutMs: 1500 });
    expect(parseTracingConfig({ OTEL_TRACES_EXPORTER: 'console' })).not.toHaveProperty('flushTimeoutMs');
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER podhook exports to otlp, console, none (comma-separated) (got "zipkin")'],
    [{ OTEL_TRACES_EXPORTER: 'otlp,none' }, 'OTEL_TRACES_EXPORTER none cannot be combined with an exporter'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://user:token@collector:4317' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http:// or https:// URL'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL must be http/json or http/protobuf: podhook sends OTLP over HTTP (JSON), to port 4318 (got "grpc")'],
    [{ OTEL_TRACES_SAMPLER: 'jaeger_remote' }, 'OTEL_TRACES_SAMPLER must be one of parentbased_always_on, parentbased_always_off, parentbased_traceidratio, always_on, always_off, traceidratio (got "jaeger_remote")'],
    [{ OTEL_TRACES_SAMPLER_ARG: '1.5' }, 'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got "1.5")'],
    [{ OTEL_TRACES_SAMPLER_ARG: 'half' }, 'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got "half")'],
    [{ TRACING_FLUSH_TIMEOUT_MS: '5s' }, 'TRACING_FLUSH_TIMEOUT_MS must be a whole number from 100 to 60000 (got "5s")'],
    [{ TRACING_FLUSH_TIMEOUT_MS: '50' }, 'TRACING_FLUSH_TIMEOUT_MS must be at least 100 (got "50")'],
    [{ TRACING_FLUSH_TIMEOUT_MS: '60001' }, 'TRACING_FLUSH_TIMEOUT_MS must be at most 60000 (got "60001")'],
    [{ OTEL_SDK_DISABLED: 'yes' }, 'OTEL_SDK_DISABLED must be true or false (got "yes")'],
    [{ OTEL_SERVICE_NAME: '   ' }, 'OTEL_SERVICE_NAME must not be blank (got "   ")'],
  ])('refuse %j with one line naming the variable, never echoing an endpoint', (env, message) => {
    expect(() => parseTracingConfig(env)).toThrow(ConfigError);
    expect(() => parseTracingConfig(env)).toThrow(`invalid configuration: ${message}`);
  });
});
