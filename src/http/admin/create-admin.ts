import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { PodhookError } from '../../core/errors.js';
import { describeCause, errorBody, INTERNAL_ERROR_ANSWER } from '../ingest.js';
import { systemClock, type Clock } from '../../core/clock.js';
import type { DeliveryStore } from '../../core/delivery-store.js';
import type { Router } from '../../core/dispatch/router.js';
import type { Logger } from '../../core/observability/logger.js';
import type { PodsReporter } from '../../core/pods/pods-report.js';
import { createRequeuer, type RequeueCallOptions } from '../../core/transfer/requeue-deliveries.js';
import { scanDeliveries } from '../../core/transfer/scan-deliveries.js';
import { createAdminApi } from './admin-api.js';
import { createAdminAuth } from './admin-auth.js';
import type { AdminContext } from './admin-context.js';
import type { AdminEnv } from './admin-env.js';
import type { Downtime } from './admin-queries.js';
import { createInspector } from './inspector/create-inspector.js';

/** Deliveries requeued per transaction. */
const REPLAY_CHUNK = 50;

export interface AdminOptions {
  /** `ADMIN_TOKEN` (at least 32 characters, checked by `parseConfig`). */
  token: string;
  store: DeliveryStore;
  router: Router;
  logger: Logger;
  clock?: Clock;
  /** Called after a replay put deliveries back, so the dispatcher runs them soon. */
  wake?: () => void;
  /** Called after a backfill was started here, so this receiver's runner looks for it at once. */
  backfillStarted?: () => void;
  /** The last time the receiver was down (the alerts heartbeat), shown in the banner and stats. */
  lastDowntime?: () => Promise<Downtime | null>;
  /** The longest an export long poll (`wait=`) holds a request: Node 25 s; 0 answers at once (Worker). */
  maxWaitMs?: number;
  /** How often a long poll looks for a newer delivery. */
  pollMs?: number;
  /**
   * How long after it is received a delivery may appear in an export. 0 where deliveries commit
   * in the order they are received (one Node process); the Worker's isolates commit concurrently.
   */
  settleMs?: number;
  /** The pause before a refused attempt is answered; doubles per refusal in the last minute. */
  failureDelay?: { baseMs: number; maxMs: number };
  sleep?: (ms: number) => Promise<void>;
  /** `GET /api/pods`: the service's pods beside what podhook holds; absent: the route answers 503 `not_configured`. */
  podsReport?: PodsReporter;
}

/**
 * The operator's surface under `/_podhook`: the JSON admin API (`/api/*`) and the delivery
 * inspector (HTML), behind one authentication. Mounted by `createApp({ admin })` only when
 * ADMIN_TOKEN is set; nothing here runs on the ingest path.
 */
export function createAdmin({
  token,
  store,
  router,
  logger,
  clock = systemClock,
  wake = () => {},
  backfillStarted = () => {},
  lastDowntime = async () => null,
  maxWaitMs = 25_000,
  pollMs = 250,
  settleMs = 0,
  failureDelay,
  sleep = (ms) => new Promise((r) => setTimeout(r, ms)),
  podsReport,
}: AdminOptions): Hono<AdminEnv> {
  const auth = createAdminAuth({ token, logger, clock, failureDelay, sleep });
  const requeue = createRequeuer({ store, router, clock });
  const replayIds = async (ids: readonly string[], options: RequeueCallOptions = {}) => {
    let replayed = 0;
    for (let i = 0; i < ids.length; i += REPLAY_CHUNK) replayed += (await requeue(ids.slice(i, i + REPLAY_CHUNK), options)).requeued;
    if (replayed > 0) wake();
    logger.info({ replayed, handler: options.handler, fresh: options.fresh === true }, 'admin replay: deliveries handed back to the dispatcher');
    return replayed;
  };
  const ctx: AdminContext = {
    store,
    router,
    clock,
    auth,
    maxWaitMs,
    pollMs,
    settleMs,
    sleep,
    lastDowntime,
    backfillStarted,
    podsReport,
    replay: replayIds,
    async replayMatching(filters, options) {
      const ids: string[] = [];
      for await (const d of scanDeliveries(store, filters)) ids.push(d.eventId);
      return replayIds(ids, options);
    },
    async countMatching(filters, max) {
      let n = 0;
      for await (const _ of scanDeliveries(store, filters)) if (++n >= max) break;
      return n;
    },
  };

  const admin = new Hono<AdminEnv>();
  admin.use(async function adminRequestId(c, next) {
    c.set('requestId', c.env?.requestId ?? crypto.randomUUID());
    await next();
  });
  // The trailing slash makes the inspector's own page `GET /_podhook/`.
  admin.route('/_podhook/', createInspector(ctx));
  admin.notFound((c) => c.json(errorBody('not_found', 'No such route.'), 404));
  admin.onError((error, c) => {
    if (error instanceof PodhookError) return c.json(errorBody(error.code, error.message, error.details), error.status as 400);
    // hono/csrf refuses a cross-site form post with a 403 HTTPException.
    if (error instanceof HTTPException && error.status === 403) return c.json(errorBody('forbidden', 'Cross-site form posts are refused.'), 403);
    logger.error({ request_id: c.get('requestId'), err: describeCause(error) }, 'unhandled error');
    return c.json(INTERNAL_ERROR_ANSWER.body, 500);
  });
  return admin;
}
