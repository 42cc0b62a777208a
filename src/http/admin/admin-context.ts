import type { Clock } from '../../core/clock.js';
import type { DeliveryStore, ScanDeliveriesOptions } from '../../core/delivery-store.js';
import type { Router } from '../../core/dispatch/router.js';
import type { PodsReporter } from '../../core/pods/pods-report.js';
import type { RequeueCallOptions } from '../../core/transfer/requeue-deliveries.js';
import type { AdminAuth } from './admin-auth.js';
import type { Downtime } from './admin-queries.js';

/** What the admin API and the inspector share, built once by `createAdmin`. */
export interface AdminContext {
  store: DeliveryStore;
  router: Router;
  clock: Clock;
  auth: AdminAuth;
  maxWaitMs: number;
  settleMs: number;
  pollMs: number;
  sleep: (ms: number) => Promise<void>;
  lastDowntime: () => Promise<Downtime | null>;
  /** The service's pods beside podhook's (`GET /api/pods`); absent when not wired. */
  podsReport?: PodsReporter;
  /** A backfill was started here: this receiver's runner looks for it at once. */
  backfillStarted: () => void;
  /** Hands these deliveries back to the dispatcher; resolves with how many. */
  replay(eventIds: readonly string[], options?: RequeueCallOptions): Promise<number>;
  /** The same for every delivery the filters match. */
  replayMatching(filters: Omit<ScanDeliveriesOptions, 'after' | 'limit'>, options?: RequeueCallOptions): Promise<number>;
  /** How many deliveries the filters match (the confirm step), counted up to `max`. */
  countMatching(filters: Omit<ScanDeliveriesOptions, 'after' | 'limit'>, max: number): Promise<number>;
}
