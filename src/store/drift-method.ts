import { eq } from 'drizzle-orm';
import type { MaintenanceStore } from '../core/delivery-store.js';
import type { StoreBackend } from './store-backend.js';

/** Recording a delivery's payload drift, the same statement on every backend. */
export function driftMethod({ db, tables }: StoreBackend): Pick<MaintenanceStore, 'recordDrift'> {
  const { deliveries } = tables;
  return {
    async recordDrift(eventId, drift) {
      await db.update(deliveries).set({ drift: JSON.stringify(drift) }).where(eq(deliveries.eventId, eventId));
    },
  };
}
