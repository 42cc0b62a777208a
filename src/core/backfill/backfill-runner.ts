import type { Clock } from '../clock.js';
import type { DeliveryStore } from '../delivery-store.js';
import type { Delivery } from '../delivery.js';
import type { Dispatcher } from '../dispatch/dispatcher.js';
import type { Router } from '../dispatch/router.js';
import { parseDeliveryBody } from '../dispatch/run-handler.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Logger } from '../observability/logger.js';
import type { Ordering } from '../order/ordering.js';
import type { Backfill, BackfillSelection } from './backfill-store.js';
import { backfillBudget, STEP_EVERY_MS, takeFromRate, type RateBucket } from './pacing.js';
import { planPage } from './plan-page.js';
import { nextRecent } from './progress.js';
import { firstSeen, typesOf } from './start-backfill.js';

/** The most deliveries one step reads (and so passes): within D1's bound parameters per statement. */
export const BACKFILL_PAGE = 50;
/** How often a runner with nothing to do looks for a backfill to run. */
const LOOK_EVERY_MS = 5_000;

export type BackfillStore = Pick<
  DeliveryStore,
  | 'listBackfills'
  | 'claimBackfill'
  | 'renewBackfill'
  | 'resolveBackfill'
  | 'finishBackfill'
  | 'backfillPage'
  | 'requeueForBackfill'
  | 'countBackfill'
  | 'handlerRegistrations'
  | 'registerHandlers'
  | 'handlerRuns'
>;

export interface BackfillRunnerOptions {
  store: BackfillStore;
  router: Router;
  ordering?: Ordering;
  /** The dispatcher the requeued deliveries are for: its load paces the steps, and it is woken after each. */
  dispatcher: Pick<Dispatcher, 'load' | 'wake' | 'drained'>;
  /** This receiver (the lease owner). */
  owner: string;
  clock: Clock;
  logger: Logger;
  /** How long the backfill's lease lasts unrenewed (LEASE_MS): a killed receiver's backfill is taken over after it. */
  leaseMs: number;
}

/** What one step did. */
export type BackfillStepResult =
  | { kind: 'idle' }
  | { kind: 'waiting'; id: string }
  | { kind: 'requeued'; id: string; requeued: number; skipped: number }
  | { kind: 'finished'; id: string; state: 'done' | 'failed' }
  | { kind: 'lost'; id: string };

export interface BackfillRunner {
  /**
   * One step: takes a running backfill's lease when it holds none, then hands the dispatcher up to
   * `budget` deliveries of it (default: what the dispatcher can spare now, at most the rate),
   * with the backfill's advance in the same transaction.
   */
  step(options?: { budget?: number }): Promise<BackfillStepResult>;
  /** Records this receiver's handlers as running from now (`handler_registrations`). */
  register(): Promise<void>;
  /** Steps on timers until `stop` (Node). */
  start(): void;
  /** Looks for a backfill at once (one was just started here). */
  wake(): void;
  /** Stops stepping and gives the lease back, so another receiver goes on at once. */
  stop(): Promise<void>;
}

interface Held {
  backfill: Backfill;
  def: HandlerDefinition;
  selection: BackfillSelection;
  rate?: RateBucket;
}

/**
 * The receiver's side of backfills: whichever dispatching receiver holds a running backfill's
 * lease requeues its deliveries, page by page from its cursor, for its own dispatcher, which runs
 * the handler as it runs live deliveries (order, leases, retries, run history, dead letters).
 * Only backfills of handlers this receiver has are taken.
 */
export function createBackfillRunner({ store, router, ordering, dispatcher, owner, clock, logger, leaseMs }: BackfillRunnerOptions): BackfillRunner {
  let held: Held | null = null;
  let claims = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = true;
  let stepping: Promise<unknown> | null = null;
  let failing = 0;

  const names = new Set(router.handlers.map((h) => h.name));

  async function claimNext(): Promise<Held | null> {
    const running = (await store.listBackfills({ state: 'running', limit: 100 })).filter((b) => names.has(b.handler)).reverse();
    for (const candidate of running) {
      const now = clock();
      if (candidate.lease && candidate.lease.until >= now) continue;
      const claimId = `${owner}.backfill.${++claims}`;
      const b = await store.claimBackfill({ id: candidate.id, owner, claimId, now, leaseMs });
      if (!b) continue;
      const def = router.handlers.find((h) => h.name === b.handler)!;
      const seen = await firstSeen(store, def.name);
      const types = typesOf(def, b.eventType);
      if (types.length === 0) {
        await store.finishBackfill({ id: b.id, claimId, now, state: 'failed', error: `${def.name} does not take ${b.eventType} here` });
        logger.warn({ backfill_id: b.id, handler: def.name, event_type: b.eventType }, 'backfill failed: its handler does not take its type here');
        continue;
      }
      let backfill = b;
      if (b.until === null) {
        // Started before the handler ever ran: history ends where this receiver (or an earlier one) first ran it.
        const until = seen ?? now;
        const counts = await store.countBackfill({ handler: def.name, types, since: b.since, until, firstSeenAt: seen });
        if (!(await store.resolveBackfill({ id: b.id, claimId, until, total: counts.matching, now }))) continue;
        backfill = { ...b, until, total: counts.matching };
      }
      logger.info({ backfill_id: b.id, handler: def.name, step: b.step, resumed: b.step > 0 }, 'backfill taken: running it here');
      return { backfill, def, selection: { handler: def.name, types, since: backfill.since, until: backfill.until!, firstSeenAt: seen } };
    }
    return null;
  }

  /** Keeps the lease while the step waits for capacity; false when it was lost (taken over, cancelled). */
  async function keepLease(h: Held, now: number): Promise<boolean> {
    const lease = h.backfill.lease!;
    if (lease.until - now > (leaseMs * 2) / 3) return true;
    const until = now + leaseMs;
    if (!(await store.renewBackfill({ id: h.backfill.id, claimId: lease.claimId, until }))) return false;
    h.backfill = { ...h.backfill, lease: { ...lease, until } };
    return true;
  }

  /** When the next step may run (Node's timers). */
  let nextStepMs = STEP_EVERY_MS;

  function budgetOf(h: Held, now: number): number {
    const paced = backfillBudget(dispatcher.load(), now);
    nextStepMs = paced.nextStepMs;
    let budget = Math.min(BACKFILL_PAGE, paced.count);
    if (h.backfill.rate !== null && budget > 0) {
      const taken = takeFromRate(h.rate, h.backfill.rate, now, budget);
      h.rate = taken.bucket;
      budget = taken.take;
    }
    return budget;
  }

  const orderOf = (def: HandlerDefinition) =>
    ordering?.spec(def.name)
      ? (d: Delivery) => {
          const body = parseDeliveryBody(d.body);
          return body.ok ? ordering.entriesFor(d, body.payload, [def]) : undefined;
        }
      : undefined;

  async function step({ budget }: { budget?: number } = {}): Promise<BackfillStepResult> {
    held ??= await claimNext();
    const h = held;
    if (!h) return { kind: 'idle' };
    const { id } = h.backfill;
    const claimId = h.backfill.lease!.claimId;
    const now = clock();
    const lost = (): BackfillStepResult => {
      held = null;
      logger.info({ backfill_id: id }, 'backfill no longer held here (cancelled, finished or taken over)');
      return { kind: 'lost', id };
    };
    const want = budget === undefined ? budgetOf(h, now) : h.backfill.rate === null ? budget : Math.min(budget, h.backfill.rate * 60);
    if (want === 0) return (await keepLease(h, now)) ? { kind: 'waiting', id } : lost();

    const candidates = await store.backfillPage(h.selection, h.backfill.cursor, BACKFILL_PAGE);
    if (candidates.length === 0) {
      held = null;
      if (!(await store.finishBackfill({ id, claimId, now: clock(), state: 'done' }))) return lost();
      logger.info({ backfill_id: id, handler: h.def.name, requeued: h.backfill.requeued, skipped: h.backfill.skipped }, 'backfill done');
      return { kind: 'finished', id, state: 'done' };
    }
    const toRun = candidates.filter((c) => !c.handled).slice(0, want).map((c) => c.delivery.eventId);
    const plan = planPage({
      candidates,
      budget: want,
      handler: h.def.name,
      handlersFor: (type) => router.handlersFor(type).map((x) => x.name),
      ledger: toRun.length > 0 ? await store.handlerRuns(toRun) : [],
      orderOf: orderOf(h.def),
    });
    const stepAt = clock();
    const b = h.backfill;
    const doneBefore = b.requeued + b.skipped;
    // The first step here starts the rate's window where the lease was taken.
    const recent = nextRecent(b.recent.length > 0 ? b.recent : [[now, doneBefore]], stepAt, doneBefore + plan.passed);
    const result = await store.requeueForBackfill({
      backfill: { id, claimId, step: b.step },
      now: stepAt,
      leaseMs,
      deliveries: plan.deliveries,
      passed: plan.passed,
      cursor: plan.cursor!,
      recent,
    });
    if (!result.advanced) return lost();
    const skipped = plan.passed - result.requeued;
    h.backfill = {
      ...b,
      step: b.step + 1,
      cursor: plan.cursor,
      requeued: b.requeued + result.requeued,
      skipped: b.skipped + skipped,
      recent,
      lease: { ...b.lease!, until: stepAt + leaseMs },
    };
    if (result.requeued > 0) dispatcher.wake();
    return { kind: 'requeued', id, requeued: result.requeued, skipped };
  }

  async function tick() {
    timer = undefined;
    if (stopped) return;
    let next = LOOK_EVERY_MS;
    const current = step()
      .then(async (r) => {
        failing = 0;
        if (r.kind === 'requeued') {
          // Lets the dispatcher lease what was handed over before the load is read again.
          await dispatcher.drained();
          next = nextStepMs;
        } else if (r.kind === 'waiting') next = STEP_EVERY_MS;
        else if (r.kind !== 'idle') next = 0; // finished or lost: look for another at once
      })
      .catch((error: Error) => {
        if (failing++ === 0) logger.error({ err: error.message, backfill_id: held?.backfill.id }, 'backfill step failed; trying again');
        next = 1_000;
      });
    stepping = current;
    await current;
    stepping = null;
    if (!stopped) arm(next);
  }

  function arm(ms: number) {
    clearTimeout(timer);
    timer = setTimeout(() => void tick(), ms);
    (timer as { unref?: () => void }).unref?.();
  }

  return {
    step,
    async register() {
      await store.registerHandlers([...names], clock());
    },
    start() {
      if (!stopped) return;
      stopped = false;
      arm(0);
    },
    wake() {
      if (!stopped && !stepping && !held) arm(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await stepping;
      const h = held;
      held = null;
      // Given back: another receiver (or this one's restart) goes on from the cursor at once.
      if (h) await store.renewBackfill({ id: h.backfill.id, claimId: h.backfill.lease!.claimId, until: clock() - 1 }).catch(() => false);
    },
  };
}
