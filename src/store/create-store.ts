import type { DeliveryStore } from '../core/delivery-store.js';
import { adminMethods } from './admin-methods.js';
import { apiKeyMethods } from './api-key-methods.js';
import { backfillMethods } from './backfill-methods.js';
import { deliveryReads } from './delivery-reads.js';
import { driftMethod } from './drift-method.js';
import { heartbeatMethods } from './heartbeat-methods.js';
import { listenCursorMethods } from './listen-cursor-methods.js';
import { orderMethods } from './order-methods.js';
import { quarantineMethod } from './quarantine-method.js';
import { rateBucketMethods } from './rate-bucket-methods.js';
import { secretMethods } from './secret-methods.js';
import { stepMethods } from './step-methods.js';
import type { StoreBackend } from './store-backend.js';
import { transferMethods } from './transfer-methods.js';
import { waitMethods } from './wait-methods.js';

/**
 * The one store: the methods written once for every backend, and the backend's own SQL for the
 * hot path (claim, lease, renew, outcome), prune and ping.
 */
export function createStore(backend: StoreBackend): DeliveryStore {
  const { claim, leaseDue, renewLeases, completeDispatch, prune, ping } = backend;
  return {
    claim,
    leaseDue,
    renewLeases,
    completeDispatch,
    prune,
    ping,
    ...quarantineMethod(backend),
    ...deliveryReads(backend),
    ...secretMethods(backend),
    ...transferMethods(backend),
    ...adminMethods(backend),
    ...heartbeatMethods(backend),
    ...listenCursorMethods(backend),
    ...orderMethods(backend),
    ...driftMethod(backend),
    ...backfillMethods(backend),
    ...rateBucketMethods(backend),
    ...apiKeyMethods(backend),
    ...stepMethods(backend),
    ...waitMethods(backend),
  };
}
