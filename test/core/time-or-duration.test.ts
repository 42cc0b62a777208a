import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTime, parseIsoTime, parseTimeOrDuration } from '../../src/core/steps/time-or-duration.js';

const NOW = Date.parse('2026-05-10T12:00:00Z');

describe('times and durations as --since, --until and the admin API take them', () => {
  it('reads ISO 8601 dates and times, and durations back from now', () => {
    expect(parseTimeOrDuration('2026-05-01', NOW)).toBe(Date.parse('2026-05-01T00:00:00Z'));
    expect(parseTimeOrDuration('2026-05-01T12:30:00Z', NOW)).toBe(Date.parse('2026-05-01T12:30:00Z'));
    expect(parseTimeOrDuration('2026-05-01T12:30:00.250+02:00', NOW)).toBe(Date.parse('2026-05-01T10:30:00.250Z'));
    expect(parseTimeOrDuration('2024-02-29', NOW)).toBe(Date.parse('2024-02-29T00:00:00Z'));
    expect(parseTimeOrDuration('90s', NOW)).toBe(NOW - 90_000);
    expect(parseTimeOrDuration('7d', NOW)).toBe(NOW - 7 * 86_400_000);
    expect(parseTimeOrDuration('36500d', NOW)).toBe(NOW - 36_500 * 86_400_000);
  });

  it('refuses dates that do not exist instead of rolling them over', () => {
    for (const text of ['2026-02-30', '2026-02-29', '2025-04-31', '2026-13-01', '2026-00-10', '2026-05-00', '2026-05-01T24:00:01Z', '2026-05-01T12:60:00Z', '2026-05-01T12:00:61Z']) {
      expect(parseTimeOrDuration(text, NOW), text).toBeNull();
      expect(parseIsoTime(text), text).toBeNull();
    }
  });

  it('refuses durations that reach beyond the dates a clock can show, and other text', () => {
    for (const text of ['9999999999999d', '36501d', '99999999999999999999s', '1e9d', '-5d', '5 d', 'yesterday', '', '2026', '2026-5-1']) {
      expect(parseTimeOrDuration(text, NOW), text).toBeNull();
    }
  });

  it('turns any number into ISO text or null, never throwing (a bad stored value must not take a listing down)', () => {
    expect(isoTime(Date.parse('2026-05-01T00:00:00Z'))).toBe('2026-05-01T00:00:00.000Z');
    expect(isoTime(null)).toBeNull();
    fc.assert(fc.property(fc.oneof(fc.double(), fc.integer(), fc.constant(-8.64e20), fc.constant(Number.NaN)), (ms) => {
      const text = isoTime(ms);
      expect(text === null || !Number.isNaN(Date.parse(text))).toBe(true);
    }));
  });
});
