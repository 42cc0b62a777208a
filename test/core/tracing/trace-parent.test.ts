import fc from 'fast-check';
import { TraceFlags } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { formatTraceParent, parseTraceParent } from '../../../src/core/tracing/trace-parent.js';

const hex = (length: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: length, maxLength: length });
const spanContext = fc.record({
  traceId: hex(32).filter((id) => /[^0]/.test(id)),
  spanId: hex(16).filter((id) => /[^0]/.test(id)),
  traceFlags: fc.constantFrom(TraceFlags.NONE, TraceFlags.SAMPLED),
});

describe('a receipt stored as W3C traceparent text', () => {
  it('reads back every valid span context, marked remote', () => {
    fc.assert(
      fc.property(spanContext, (span) => {
        const text = formatTraceParent(span)!;
        expect(text).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
        expect(parseTraceParent(text)).toEqual({ ...span, isRemote: true });
      }),
    );
  });

  it('stores nothing for an invalid span context (a non-recording one)', () => {
    expect(formatTraceParent({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 })).toBeNull();
  });

  it('gives no context for text that is not a traceparent, so a row never fails for it', () => {
    const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(parseTraceParent(valid)).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 });
    for (const text of [
      null,
      '',
      'garbage',
      `${valid}-extra`, // version 00 has exactly four fields
      valid.replace(/^00/, 'ff'),
      valid.toUpperCase(),
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
    ]) {
      expect(parseTraceParent(text), String(text)).toBeNull();
    }
    // A later version may add fields: read the four it shares with 00.
    expect(parseTraceParent(`01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later`)).not.toBeNull();
  });
});
