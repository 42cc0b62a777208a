import type { Delivery, DeliveryStore, ScanDeliveriesOptions } from '../delivery-store.js';

/** Every stored delivery that matches, oldest first, read from the store one page at a time. */
export async function* scanDeliveries(
  store: DeliveryStore,
  filters: Omit<ScanDeliveriesOptions, 'after' | 'limit'> = {},
  pageSize = 200,
): AsyncGenerator<Delivery> {
  let after: ScanDeliveriesOptions['after'];
  for (;;) {
    const page = await store.scan({ ...filters, after, limit: pageSize });
    yield* page;
    if (page.length < pageSize) return;
    after = page.at(-1)!;
  }
}
