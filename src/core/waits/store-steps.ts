import type { Clock } from '../clock.js';
import type { DeliveryStore } from '../delivery-store.js';
import type { RegistryPayloads } from '../events/registry-module.js';
import { createPodLocator } from '../pods/pod-locator.js';
import type { RunnerSteps } from '../runner/job-runner.js';
import { createStepSeal, storeJournals } from '../steps/index.js';
import { createEventWaits, type EventWaits, type EventWaitsOptions } from './event-waits.js';

export interface StoreStepsOptions extends Pick<EventWaitsOptions, 'onWoken' | 'observe'> {
  store: DeliveryStore;
  /** Hides secrets in a failed step's error, where its row is written. */
  redact?: (text: string) => string;
  /** The registry's payload exports: where each type carries its pod id (`orderFields`, `payloadFields`). */
  payloads?: Pick<RegistryPayloads, 'fields' | 'orderFields'>;
  /** STEP_ENCRYPTION_KEY, or null. */
  stepKey: string | null;
  clock: Clock;
  /** DISPATCH_POLL_MS: how stale this process's "does any run wait" flag may be. */
  refreshMs: number;
}

/**
 * Durable steps and waits kept in the store, for a runner in this process (the receiver, `podhook
 * replay`, `podhook listen`): the journals (each write fenced by the run's claim), the seal, where
 * each type carries its pod id, and the waits (`ctx.waitForEvent`) the journals check.
 */
export function storeSteps({ store, redact, payloads, stepKey, clock, refreshMs, onWoken, observe }: StoreStepsOptions): { steps: RunnerSteps; waits: EventWaits } {
  const locator = createPodLocator(payloads);
  const waits = createEventWaits({ store, locator, clock, refreshMs, onWoken, observe });
  return { steps: { journals: storeJournals(store, redact, waits), seal: createStepSeal(stepKey), locator }, waits };
}
