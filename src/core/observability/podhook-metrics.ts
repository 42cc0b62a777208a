import type { DispatchObserver } from '../dispatch/dispatcher.js';
import type { DeliveryStore } from '../delivery-store.js';
import { isEventType } from '../events/event-types.js';
import type { IngestOutcome } from '../ingest/ingest-outcome.js';
import { createMetricsRegistry, type MetricsRegistry } from './metrics.js';

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Only known types become label values: header values of refused requests are attacker-chosen. */
const typeLabel = (type: string | undefined) => (type && isEventType(type) ? type : 'other');

export interface PodhookMetrics {
  registry: MetricsRegistry;
  /** For `createApp({ onOutcome })`. */
  onOutcome: (outcome: IngestOutcome) => void;
  /** For `createDispatcher({ observer })`. */
  observer: DispatchObserver;
}

/**
 * podhook's metrics: deliveries by outcome and type, verification failures by reason, ingest
 * latency, dispatch lag (receipt → handler start), handler runs and failures, and, read from the
 * store at scrape time, queue depth and dead letters.
 */
export function createPodhookMetrics(store: DeliveryStore): PodhookMetrics {
  const registry = createMetricsRegistry();
  const deliveries = registry.counter('podhook_deliveries_total', 'Ingest answers by outcome and event type.');
  const verification = registry.counter('podhook_verification_failures_total', 'Deliveries refused before the store, by reason.');
  const ingestSeconds = registry.histogram('podhook_ingest_duration_seconds', 'Time to answer a delivery.', SECONDS);
  const lag = registry.histogram('podhook_dispatch_lag_seconds', 'Time from receipt to handler start.', SECONDS);
  const handlerSeconds = registry.histogram('podhook_handler_duration_seconds', 'Handler run time.', SECONDS);
  const runs = registry.counter('podhook_handler_runs_total', 'Handler runs by handler and outcome.');
  const failures = registry.counter('podhook_handler_failures_total', 'Failed handler runs (errors, time-outs, invalid payloads).');
  const finished = registry.counter('podhook_dispatch_outcomes_total', 'Dispatch attempts by resulting status and event type.');
  registry.gauge('podhook_queue_depth', 'Deliveries waiting for their handlers, by status.', async () => {
    const s = await store.queueStats();
    return [
      [{ status: 'queued' }, s.queued],
      [{ status: 'failed' }, s.failed],
    ];
  });
  registry.gauge('podhook_dead_letters', 'Deliveries in status dead.', async () => [[{}, (await store.queueStats()).dead]]);

  return {
    registry,
    onOutcome(o) {
      deliveries.inc({ outcome: o.outcome, event_type: typeLabel(o.eventType) });
      ingestSeconds.observe({}, o.latencyMs / 1000);
      if (o.outcome === 'rejected' && (o.status === 400 || o.status === 401)) verification.inc({ reason: o.reason ?? 'unknown' });
    },
    observer: {
      handlerStarted(_handler, _type, lagMs) {
        lag.observe({}, lagMs / 1000);
      },
      handlerFinished(handler, _type, outcome, durationMs) {
        runs.inc({ handler, outcome });
        handlerSeconds.observe({ handler }, durationMs / 1000);
        if (outcome !== 'succeeded' && outcome !== 'interrupted') failures.inc({ handler });
      },
      deliveryFinished(type, status) {
        finished.inc({ status, event_type: typeLabel(type) });
      },
    },
  };
}
