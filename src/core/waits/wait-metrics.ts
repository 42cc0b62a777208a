import type { Clock } from '../clock.js';
import type { MetricsRegistry } from '../observability/metrics.js';
import type { WaitOutcome } from './event-waits.js';
import type { EventWaitStore } from './wait-store.js';

/**
 * ctx.waitForEvent on /metrics: `podhook_waiting_runs` (runs waiting now, read from the store at
 * most once per `refreshMs`) and `podhook_event_waits_total{outcome}` (matched, timed_out: how
 * waits ended in this process; woken: runs a delivery received here woke).
 */
export function createWaitMetrics(registry: MetricsRegistry, store: Pick<EventWaitStore, 'countWaits'>, { clock = Date.now, refreshMs = 15_000 }: { clock?: Clock; refreshMs?: number } = {}) {
  let cached: { at: number; value: Promise<number> } | undefined;
  registry.gauge('podhook_waiting_runs', 'Handler runs parked at ctx.waitForEvent now.', async () => {
    const now = clock();
    if (!cached || now - cached.at >= refreshMs) {
      const value = store.countWaits();
      value.catch(() => (cached = undefined));
      cached = { at: now, value };
    }
    return [[{}, await cached.value]];
  });
  const outcomes = registry.counter('podhook_event_waits_total', 'ctx.waitForEvent by outcome: matched and timed_out (waits that ended in this process), woken (runs a delivery received here made due).');
  return { observe: (outcome: WaitOutcome) => outcomes.inc({ outcome }) };
}
