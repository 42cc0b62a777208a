import type { DispatchInstrument } from '../dispatch/dispatch-instrument.js';
import type { Clock } from '../clock.js';
import type { Backfill, BackfillStore } from '../backfill/backfill-store.js';
import { backfillProgress } from '../backfill/progress.js';
import type { OrderStats, OrderStore, QueueStats, ReadStore } from '../delivery-store.js';
import { isEventType } from '../events/event-types.js';
import type { IngestOutcome } from '../ingest/ingest-outcome.js';
import type { StepStore } from '../steps/step-record.js';
import { createMetricsRegistry, type MetricsRegistry } from './metrics.js';
import type { PodsObserver } from '../pods/pods-observer.js';
import { podsCodeLabel } from '../pods/pods-error.js';

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Only known types become label values: header values of refused requests are attacker-chosen. */
const typeLabel = (type: string | undefined) => (type && isEventType(type) ? type : 'other');

/** Runs parked on a bucket the gauge keeps, at most: past it, those due soonest are let go (the gauge under-counts, never grows). */
export const MAX_PARKED_TRACKED = 10_000;

export interface PodhookMetricsOptions {
  clock?: Clock;
  /** How old the queue gauges may be before a scrape reads the store again (default 15 s). */
  refreshMs?: number;
  /** The ordered handlers' names: their order gauges are served (read with the queue gauges). */
  orderedHandlers?: readonly string[];
}

export interface PodhookMetrics {
  registry: MetricsRegistry;
  /** For `createApp({ onOutcome })`. */
  onOutcome: (outcome: IngestOutcome) => void;
  /** For `createDispatcher({ instruments })`: counts what the dispatcher's events say. */
  instrument: DispatchInstrument;
  /** For the drift check at the door: each difference of a drifted delivery, by its type and kind. */
  onDrift: (eventType: string, differences: readonly { kind: string }[]) => void;
  /** For the pod client of handlers (`ctx.pods`): calls, waits, and runs parked on an empty bucket. */
  pods: {
    observer: PodsObserver;
    parked(bucket: string, retryAt: number): void;
  };
  /** For the handler threads (Node): errors handler code left behind, and threads replaced. */
  threads: {
    stray(kind: string, handler: string | undefined): void;
    restarted(reason: string): void;
  };
}

/**
 * podhook's metrics: deliveries by outcome and type, verification failures by reason, ingest
 * latency, dispatch lag (receipt → handler start), handler runs and failures, durable steps, payload drift, and queue depth,
 * dead letters, parked runs and what running backfills have left, read from the store at most once per `refreshMs`, whatever the number of scrapers
 * (the counts scan the open rows, which a backlog makes long).
 */
export function createPodhookMetrics(
  store: Pick<ReadStore, 'queueStats'> & Pick<OrderStore, 'orderStats'> & Pick<BackfillStore, 'listBackfills'> & Pick<StepStore, 'parkStats'>,
  { clock = Date.now, refreshMs = 15_000, orderedHandlers = [] }: PodhookMetricsOptions = {},
): PodhookMetrics {
  /** A store read shared by every scrape within `refreshMs`. */
  const cachedRead = <T>(read: () => Promise<T>) => {
    let cached: { at: number; value: Promise<T> } | undefined;
    return () => {
      const now = clock();
      if (!cached || now - cached.at >= refreshMs) {
        const value = read();
        // A failed read is not kept: the next scrape tries again.
        value.catch(() => (cached = undefined));
        cached = { at: now, value };
      }
      return cached.value;
    };
  };
  const queueStats = cachedRead<QueueStats>(() => store.queueStats());
  const orderStats = cachedRead<OrderStats[]>(() => store.orderStats());
  const runningBackfills = cachedRead<Backfill[]>(() => store.listBackfills({ state: 'running' }));
  const parkStats = cachedRead(() => store.parkStats());
  const registry = createMetricsRegistry();
  const deliveries = registry.counter('podhook_deliveries_total', 'Ingest answers by outcome and event type.');
  const verification = registry.counter('podhook_verification_failures_total', 'Deliveries refused before the store, by reason.');
  const ingestSeconds = registry.histogram('podhook_ingest_duration_seconds', 'Time to answer a delivery.', SECONDS);
  const lag = registry.histogram('podhook_dispatch_lag_seconds', 'Time from receipt to handler start.', SECONDS);
  const handlerSeconds = registry.histogram('podhook_handler_duration_seconds', 'Handler run time.', SECONDS);
  const runs = registry.counter('podhook_handler_runs_total', 'Handler runs by handler and outcome.');
  const failures = registry.counter('podhook_handler_failures_total', 'Failed handler runs (errors, time-outs, invalid payloads).');
  const finished = registry.counter('podhook_dispatch_outcomes_total', 'Dispatch attempts by resulting status and event type.');
  const leasesLost = registry.counter('podhook_leases_lost_total', 'Leases this process lost to another claim or could not renew (nothing recorded), by reason.');
  const drift = registry.counter('podhook_payload_drift_total', 'Differences of new deliveries\' payloads from their type\'s learned shape, by event type and kind.');
  const strays = registry.counter('podhook_handler_stray_errors_total', 'Exceptions and rejections handler code left uncaught, by handler (unknown: outside any call) and kind.');
  const podsCalls = registry.counter('podhook_pods_calls_total', 'Calls handlers made to the pod service, by operation and how they ended (ok, the error code, or other for a code the service chose that podhook does not know).');
  const podsWaited = registry.counter('podhook_pods_wait_seconds_total', 'Time calls to the pod service waited for a token of their bucket, by bucket.');
  /** Runs this process parked on an empty bucket, by the time they wake: a gauge of those still waiting. */
  const parkedOnBucket: { bucket: string; until: number }[] = [];
  /** Drops the runs now due; kept when runs park, not only when /metrics is read, so it is as long as the runs still waiting (at most MAX_PARKED_TRACKED). */
  const pruneParked = () => {
    const now = clock();
    let kept = 0;
    for (const p of parkedOnBucket) if (p.until > now) parkedOnBucket[kept++] = p;
    parkedOnBucket.length = kept;
    if (kept > MAX_PARKED_TRACKED) {
      parkedOnBucket.sort((a, b) => b.until - a.until);
      parkedOnBucket.length = MAX_PARKED_TRACKED;
    }
  };
  /** Pruned when it has doubled since the last prune: amortised O(1) a park. */
  let prunedAt = 0;
  registry.gauge('podhook_pods_parked_runs', 'Handler runs this process parked on an empty bucket of the pod service and not yet due, by bucket.', async () => {
    pruneParked();
    prunedAt = parkedOnBucket.length;
    const by = new Map<string, number>();
    for (const p of parkedOnBucket) by.set(p.bucket, (by.get(p.bucket) ?? 0) + 1);
    return ['writes', 'reads', 'key_mints'].map((bucket) => [{ bucket }, by.get(bucket) ?? 0]);
  });
  const restarts = registry.counter('podhook_handler_thread_restarts_total', 'Handler threads ended and replaced, by reason (timeout, out_of_memory, exited, stray_error).');
  registry.gauge('podhook_queue_depth', 'Deliveries waiting for their handlers, by status.', async () => {
    const s = await queueStats();
    return [
      [{ status: 'queued' }, s.queued],
      [{ status: 'failed' }, s.failed],
    ];
  });
  registry.gauge('podhook_dead_letters', 'Deliveries in status dead.', async () => [[{}, (await queueStats()).dead]]);
  registry.gauge('podhook_backfill_remaining', 'Deliveries a running backfill has not passed yet, by handler.', async () =>
    (await runningBackfills()).map((b) => [{ handler: b.handler }, backfillProgress(b, clock()).remaining]),
  );
  const steps = registry.counter('podhook_steps_total', 'Durable steps by handler and outcome: succeeded (ran and recorded; a sleep: woke), failed (threw), replayed (its recorded result given back).');
  registry.gauge('podhook_parked_runs', 'Handler runs parked at a durable sleep now.', async () => [[{}, (await parkStats()).parked]]);
  registry.gauge('podhook_parked_overdue_seconds', 'How far past its wake time the earliest parked run is (0 when none is overdue).', async () => {
    const { earliestWakeAt } = await parkStats();
    return [[{}, earliestWakeAt === null ? 0 : Math.max(0, (clock() - earliestWakeAt) / 1000)]];
  });
  const stale = registry.counter('podhook_order_stale_total', 'Stale events met by ordered handlers (a newer one of the key already ran), by handler and action: run or skip.');
  if (orderedHandlers.length > 0) {
    const byHandler = async () => {
      const rows = new Map((await orderStats()).map((r) => [r.handler, r]));
      return orderedHandlers.map((handler) => ({ handler, row: rows.get(handler) }));
    };
    registry.gauge('podhook_order_waiting', 'Deliveries an ordered handler has not run yet (waiting on an earlier one of their key, or running), by handler.', async () =>
      (await byHandler()).map(({ handler, row }) => [{ handler }, row?.waiting ?? 0]),
    );
    registry.gauge('podhook_order_oldest_wait_seconds', 'How long the oldest of them has waited since it was received, by handler.', async () =>
      (await byHandler()).map(({ handler, row }) => [{ handler }, row?.oldestReceivedAt ? Math.max(0, (clock() - row.oldestReceivedAt) / 1000) : 0]),
    );
  }

  return {
    registry,
    onOutcome(o) {
      deliveries.inc({ outcome: o.outcome, event_type: typeLabel(o.eventType) });
      ingestSeconds.observe({}, o.latencyMs / 1000);
      if (o.outcome === 'rejected' && (o.status === 400 || o.status === 401)) verification.inc({ reason: o.reason ?? 'unknown' });
    },
    onDrift(type, differences) {
      for (const d of differences) drift.inc({ type: typeLabel(type), kind: d.kind });
    },
    pods: {
      observer: {
        // The service's codes are its own to choose: only the known ones become label values.
        call: (e) => podsCalls.inc({ operation: e.operation, code: podsCodeLabel(e.code) }),
        wait: (e) => podsWaited.inc({ bucket: e.bucket }, e.waitedMs / 1000),
      },
      parked(bucket, until) {
        parkedOnBucket.push({ bucket, until });
        if (parkedOnBucket.length > Math.max(64, 2 * prunedAt)) {
          pruneParked();
          prunedAt = parkedOnBucket.length;
        }
      },
    },
    threads: {
      stray: (kind, handler) => strays.inc({ handler: handler ?? 'unknown', kind }),
      restarted: (reason) => restarts.inc({ reason }),
    },
    instrument: { subscriber: {
      handlerStarted(_handler, _type, lagMs) {
        lag.observe({}, lagMs / 1000);
      },
      handlerFinished(handler, _type, outcome, durationMs) {
        runs.inc({ handler, outcome });
        handlerSeconds.observe({ handler }, durationMs / 1000);
        if (outcome !== 'succeeded' && outcome !== 'interrupted' && outcome !== 'skipped' && outcome !== 'parked') failures.inc({ handler });
      },
      deliveryFinished(type, status) {
        finished.inc({ status, event_type: typeLabel(type) });
      },
      leaseLost(reason) {
        leasesLost.inc({ reason });
      },
      orderStale(handler, action) {
        stale.inc({ handler, action });
      },
      handlerSteps(handler, succeeded, failed, replayed) {
        if (succeeded > 0) steps.inc({ handler, outcome: 'succeeded' }, succeeded);
        if (failed > 0) steps.inc({ handler, outcome: 'failed' }, failed);
        if (replayed > 0) steps.inc({ handler, outcome: 'replayed' }, replayed);
      },
    } },
  };
}
