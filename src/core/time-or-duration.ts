const DURATION = /^(\d+)(s|m|h|d)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * A time as `--since` and `--until` take it: ISO 8601 (2026-05-01, 2026-05-01T12:00:00Z), or a
 * duration back from `now` (90s, 15m, 2h, 7d). Epoch ms, or null when it is neither.
 */
export function parseTimeOrDuration(value: string, now: number): number | null {
  const d = DURATION.exec(value);
  if (d) return now - Number(d[1]) * UNIT_MS[d[2] as keyof typeof UNIT_MS];
  const at = Date.parse(value);
  return /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(at) ? at : null;
}
