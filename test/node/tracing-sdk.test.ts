import { ROOT_CONTEXT, SpanKind, TraceFlags } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace-node';
import { describe, expect, it } from 'vitest';
import { SPAN } from '../../src/core/tracing/names.js';
import { buildSampler, diagToLogger } from '../../src/node/tracing-sdk.js';
import { captureLogger } from '../helpers/capture-logger.js';

const receipt = (sampled: boolean) => [
  { context: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, isRemote: true } },
];
/** A trace id the ratio sampler keeps at 0.5, and one it drops (it XORs the id's four 32-bit words). */
const KEPT = '00000000000000000000000000000001';
const DROPPED = 'ffffffff000000000000000000000000';

describe('the sampler OTEL_TRACES_SAMPLER names', () => {
  it('keeps a delivery whole under parentbased_traceidratio: an attempt follows its receipt, whatever its own trace id', () => {
    const sampler = buildSampler({ sampler: 'parentbased_traceidratio', ratio: 0.5 });
    const decide = (traceId: string, name: string, links: ReturnType<typeof receipt> | []) =>
      sampler.shouldSample(ROOT_CONTEXT, traceId, name, SpanKind.CONSUMER, {}, links).decision;
    expect(decide(DROPPED, SPAN.dispatch, receipt(true))).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide(KEPT, SPAN.dispatch, receipt(false))).toBe(SamplingDecision.NOT_RECORD);
    expect(decide(DROPPED, SPAN.replay, receipt(true))).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    // Without a receipt (stored with tracing off), or any other root span: the ratio decides.
    expect(decide(KEPT, SPAN.dispatch, [])).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide(DROPPED, SPAN.dispatch, [])).toBe(SamplingDecision.NOT_RECORD);
    expect(decide(DROPPED, 'POST /webhooks', receipt(true))).toBe(SamplingDecision.NOT_RECORD);
  });

  it('ignores links and parents alike for the samplers that are not parent-based', () => {
    const sampler = buildSampler({ sampler: 'traceidratio', ratio: 0.5 });
    expect(sampler.shouldSample(ROOT_CONTEXT, DROPPED, SPAN.dispatch, SpanKind.CONSUMER, {}, receipt(true)).decision).toBe(SamplingDecision.NOT_RECORD);
    expect(buildSampler({ sampler: 'always_off', ratio: 1 }).shouldSample(ROOT_CONTEXT, KEPT, 'x', SpanKind.INTERNAL, {}, []).decision).toBe(SamplingDecision.NOT_RECORD);
  });
});

describe("the SDK's own warnings and errors in the log", () => {
  it('logs each kind at most once a minute, apart: an export error right after a warning is logged', () => {
    const log = captureLogger();
    let now = 1_000_000;
    const diag = diagToLogger(log.logger, () => now);
    diag.warn('a warning');
    now += 1_000;
    diag.error('export failed');
    diag.warn('another warning');
    diag.error('export failed again');
    now += 60_000;
    diag.error('still failing');
    expect(log.records().map((r) => [r.level, r.msg])).toEqual([
      [40, 'tracing: a warning'],
      [50, 'tracing: export failed'],
      [50, 'tracing: still failing'],
    ]);
  });
});
