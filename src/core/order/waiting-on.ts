import type { OrderStore, OrderWait } from '../delivery-store.js';
import type { Delivery } from '../delivery.js';

/**
 * What these deliveries' ordered handlers wait on, by event id: read only for the ones not yet
 * processed (one store read for all of them, none when none is open).
 */
export async function readOrderWaits(store: Pick<OrderStore, 'orderWaits'>, deliveries: readonly Delivery[]): Promise<Map<string, OrderWait[]>> {
  const open = deliveries.filter((d) => d.status === 'queued' || d.status === 'failed').map((d) => d.eventId);
  const waits = new Map<string, OrderWait[]>();
  if (open.length === 0) return waits;
  for (const w of await store.orderWaits(open)) {
    const list = waits.get(w.eventId);
    if (list) list.push(w);
    else waits.set(w.eventId, [w]);
  }
  return waits;
}

/** The delivery one waits on (the first of its ordered handlers that waits on one), else null. */
export const waitingOnOf = (waits: readonly OrderWait[] | undefined): string | null => waits?.find((w) => w.waitingOn !== null)?.waitingOn ?? null;
