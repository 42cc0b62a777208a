import type { OrderStore } from '../delivery-store.js';
import type { Delivery } from '../delivery.js';
import { readOrderWaits, waitingOnOf } from '../order/waiting-on.js';
import type { ParkedRun, StepStore } from '../steps/step-record.js';
import { deliveryJson, type DeliveryRow } from './delivery-export.js';

/**
 * Where these deliveries' handler runs are parked at a durable sleep, by event id: the earliest
 * wake of each (the time it is due again). Read only for the queued ones (one store read for all
 * of them, none when none is queued): a parked run's delivery is queued.
 */
export async function readParked(store: Pick<StepStore, 'parkedRuns'>, deliveries: readonly Delivery[]): Promise<Map<string, ParkedRun>> {
  const queued = deliveries.filter((d) => d.status === 'queued').map((d) => d.eventId);
  const parked = new Map<string, ParkedRun>();
  if (queued.length === 0) return parked;
  for (const run of await store.parkedRuns(queued)) {
    const seen = parked.get(run.eventId);
    if (!seen || run.wakeAt < seen.wakeAt) parked.set(run.eventId, run);
  }
  return parked;
}

/**
 * Deliveries as the rows `podhook deliveries --json`, `GET /_podhook/api/deliveries` and the test
 * kit's `deliveries()` give: each with the delivery an ordered handler waits on and where a run is parked.
 */
export async function deliveryRows(store: Pick<OrderStore, 'orderWaits'> & Pick<StepStore, 'parkedRuns'>, deliveries: readonly Delivery[]): Promise<DeliveryRow[]> {
  const [waits, parked] = await Promise.all([readOrderWaits(store, deliveries), readParked(store, deliveries)]);
  return deliveries.map((d) => deliveryJson(d, waitingOnOf(waits.get(d.eventId)), parked.get(d.eventId) ?? null));
}
