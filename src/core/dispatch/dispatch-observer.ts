import type { DispatchOutcome } from '../delivery-store.js';
import type { LeaseLoss } from './lease-keeper.js';
import type { HandlerObserver } from './run-handler.js';

/** What `DispatchObserver.deliveryFinished` learns about the attempt that ended. */
export interface DeliveryFinishedDetail {
  eventId: string;
  /** The delivery's attempt count once this outcome is stored. */
  attempt: number;
  /** The handlers that failed in this attempt (empty when none failed or none ran). */
  failures: ReadonlyArray<{ handler: string; error: string }>;
}

/** Hooks for metrics and alerts; every method optional. */
export interface DispatchObserver extends HandlerObserver {
  /** An attempt's outcome is stored (not called for an attempt interrupted by shutdown: nothing is stored). */
  deliveryFinished?(eventType: string, status: DispatchOutcome['status'], detail: DeliveryFinishedDetail): void;
  /**
   * This process lost a delivery's lease: another claim took it over, it could not be renewed in
   * time, or (`outcome_fenced`) the outcome write found another claim. Nothing was recorded.
   */
  leaseLost?(reason: LeaseLoss | 'outcome_fenced'): void;
  /** An ordered handler met a stale event (a newer one of its key already ran): it ran it with `order.stale`, or skipped it. */
  orderStale?(handler: string, action: 'run' | 'skip'): void;
}
