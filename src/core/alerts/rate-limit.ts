import type { Clock } from '../clock.js';

export interface AlertRateLimitOptions {
  clock: Clock;
  /** At most one alert per kind and key in this time (`ALERT_MIN_INTERVAL_MINUTES`). */
  minIntervalMs: number;
}

/** Whether to send now, and how many alerts of this kind and key were held back since the last one sent. */
export type RateDecision = { send: true; suppressed: number } | { send: false };

export interface AlertRateLimit {
  take(kind: string, key: string): RateDecision;
}

/** Keys remembered before old ones are forgotten (one per handler or event type in practice). */
const MAX_KEYS = 1000;

/** One alert per kind and key per interval; the next one sent says how many were held back. */
export function createAlertRateLimit({ clock, minIntervalMs }: AlertRateLimitOptions): AlertRateLimit {
  const last = new Map<string, { sentAt: number; suppressed: number }>();
  return {
    take(kind, key) {
      const now = clock();
      const id = `${kind}\u0000${key}`;
      const seen = last.get(id);
      if (seen && now - seen.sentAt < minIntervalMs) {
        seen.suppressed++;
        return { send: false };
      }
      if (!seen && last.size >= MAX_KEYS) {
        for (const [k, v] of last) if (now - v.sentAt >= minIntervalMs) last.delete(k);
        if (last.size >= MAX_KEYS) last.delete(last.keys().next().value!);
      }
      last.set(id, { sentAt: now, suppressed: 0 });
      return { send: true, suppressed: seen?.suppressed ?? 0 };
    },
  };
}
