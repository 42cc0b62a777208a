const DURATION = /^(\d{1,12})(s|m|h|d)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** The longest duration back from now: 100 years (36500d) reaches before any stored delivery. */
export const MAX_DURATION_MS = 36_500 * 86_400_000;
/** What the parsers below take, for messages that name a field. */
export const TIME_OR_DURATION_HINT = 'an ISO 8601 date or time that exists (2026-05-01, 2026-05-01T12:00:00Z) or a duration back from now up to 36500d (90s, 15m, 2h, 7d)';

// YYYY-MM-DD, optionally THH:MM[:SS[.fff]] with Z or ±HH:MM: the forms Date.parse reads alike everywhere.
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * An ISO 8601 date or date-time as epoch ms, or null. Unlike `Date.parse` alone, a date that does
 * not exist (2026-02-30, which `Date.parse` rolls over to March 2) or a time like 24:00 is null.
 */
export function parseIsoTime(value: string): number | null {
  const m = ISO.exec(value);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(2000, month, 0)).getUTCDate()) return null;
  // Date.UTC(2000, …) above allows 29 February; a year without one is checked here.
  if (month === 2 && day === 29 && new Date(Date.UTC(year, 1, 29)).getUTCMonth() !== 1) return null;
  if (m[4] !== undefined && (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59)) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : at;
}

/**
 * A time as `--since` and `--until` take it: ISO 8601 (2026-05-01, 2026-05-01T12:00:00Z), or a
 * duration back from `now` (90s, 15m, 2h, 7d) of at most MAX_DURATION_MS. Epoch ms, or null when
 * it is neither (a date that does not exist, a duration that overflows).
 */
export function parseTimeOrDuration(value: string, now: number): number | null {
  const d = DURATION.exec(value);
  if (d) {
    const back = Number(d[1]) * UNIT_MS[d[2] as keyof typeof UNIT_MS];
    return back <= MAX_DURATION_MS ? now - back : null;
  }
  return parseIsoTime(value);
}

/**
 * Epoch ms as ISO 8601 text, or null for null and for a number no date has (a bad value stored
 * by an older version): never throws, so one bad row cannot take a listing down.
 */
export function isoTime(ms: number | null | undefined): string | null {
  if (ms === null || ms === undefined) return null;
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

const SPAN = /^(\d{1,12})(ms|s|m|h|d)$/;
const SPAN_UNIT_MS = { ms: 1, ...UNIT_MS } as const;

/**
 * A span of time as a sleep takes it: milliseconds (a number, or `'500ms'`), or `'90s'`, `'2m'`,
 * `'1h'`, `'1d'`. Milliseconds, or null for anything else (a negative, fractional or unknown unit).
 */
export function parseSpan(value: number | string): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : null;
  const m = SPAN.exec(value.trim());
  return m ? Number(m[1]) * SPAN_UNIT_MS[m[2] as keyof typeof SPAN_UNIT_MS] : null;
}
