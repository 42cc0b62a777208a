import type { Clock } from '../clock.js';
import type { DispatchStore } from '../delivery-store.js';
import type { Delivery } from '../delivery.js';
import type { Dispatcher } from '../dispatch/dispatcher.js';
import { parseDeliveryBody } from '../dispatch/parse-delivery-body.js';
import type { Router } from '../dispatch/router.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Logger } from '../observability/logger.js';
import type { Ordering } from '../order/ordering.js';
import type { BackfillCandidate, BackfillStore } from './backfill-store.js';
import { claimBackfill, type HeldBackfill } from './claim-backfill.js';
import { backfillBudget, STEP_EVERY_MS, takeFromRate } from './pacing.js';
import { planPage } from './plan-page.js';
import { nextRecent } from './progress.js';

/** The most deliveries one step reads (and so passes): within D1's bound parameters per statement. */
export const BACKFILL_PAGE = 50;
/** How often a receiver with nothing to do looks for a backfill to run. */
export const LOOK_EVERY_MS = 5_000;

/** The store role a backfill stepper uses. */
export type BackfillStepperStore = Pick<
  BackfillStore,
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
> &
  Pick<DispatchStore, 'handlerRuns'>;

export interface BackfillStepperOptions {
  store: BackfillStepperStore;
  router: Router;
  /** The ordered handlers: a page's deliveries of an ordered handler are requeued with their places in their keys. */
  ordering?: Ordering;
  /** The dispatcher the requeued deliveries are for: its load paces the steps, and it is woken after each. */
  dispatcher: Pick<Dispatcher, 'load' | 'wake'>;
  /** This receiver (the lease owner). */
  owner: string;
  clock: Clock;
  logger: Logger;
  /** How long the backfill's lease lasts unrenewed (LEASE_MS): a killed receiver's backfill is taken over after it. */
  leaseMs: number;
}

/** What one step did, and when the next may run (`nextMs`, for a scheduler). */
export type BackfillStepResult = (
  | { kind: 'idle' }
  | { kind: 'waiting'; id: string }
  | { kind: 'requeued'; id: string; requeued: number; skipped: number }
  | { kind: 'finished'; id: string; state: 'done' | 'failed' }
  | { kind: 'lost'; id: string }
) & { nextMs: number };

export interface BackfillStepper {
  /**
   * One step: takes a running backfill's lease when it holds none, then hands the dispatcher up to
   * `budget` deliveries of it (default: what the dispatcher can spare now, at most the rate),
   * with the backfill's advance in the same transaction.
   */
  step(options?: { budget?: number }): Promise<BackfillStepResult>;
  /** Records this receiver's handlers as running from now (`handler_registrations`). */
  register(): Promise<void>;
  /** Whether it holds a backfill's lease now. */
  readonly holding: boolean;
  /** Gives the lease back, so another receiver goes on from the cursor at once. */
  release(): Promise<void>;
}

type StepperParts = Pick<BackfillStepperOptions, 'store' | 'router' | 'ordering' | 'dispatcher' | 'clock' | 'leaseMs'>;

/** Keeps the lease while the step waits for capacity; false when it was lost (taken over, cancelled). */
async function keepLease({ store, leaseMs }: StepperParts, h: HeldBackfill, now: number): Promise<boolean> {
  const lease = h.backfill.lease!;
  if (lease.until - now > (leaseMs * 2) / 3) return true;
  const until = now + leaseMs;
  if (!(await store.renewBackfill({ id: h.backfill.id, claimId: lease.claimId, until }))) return false;
  h.backfill = { ...h.backfill, lease: { ...lease, until } };
  return true;
}

/** How many deliveries this step may hand over, and when the next step may run. */
function budgetOf({ dispatcher }: StepperParts, h: HeldBackfill, now: number, given: number | undefined): { budget: number; nextMs: number } {
  if (given !== undefined) return { budget: h.backfill.rate === null ? given : Math.min(given, h.backfill.rate * 60), nextMs: STEP_EVERY_MS };
  const paced = backfillBudget(dispatcher.load(), now);
  let budget = Math.min(BACKFILL_PAGE, paced.count);
  if (h.backfill.rate !== null && budget > 0) {
    const taken = takeFromRate(h.rate, h.backfill.rate, now, budget);
    h.rate = taken.bucket;
    budget = taken.take;
  }
  return { budget, nextMs: paced.nextStepMs };
}

/** An ordered handler's places for a delivery requeued for it (none for a handler not ordered). */
const orderOf = (ordering: Ordering | undefined, def: HandlerDefinition) =>
  ordering?.spec(def.name)
    ? (d: Delivery) => {
        const body = parseDeliveryBody(d.body);
        return body.ok ? ordering.entriesFor(d, body.payload, [def]) : undefined;
      }
    : undefined;

/**
 * Requeues one page of the backfill from its cursor (the deliveries its handler has not run, up
 * to `budget`), with its advance in the same transaction; null when the lease was lost meanwhile.
 */
async function requeuePage(parts: StepperParts, h: HeldBackfill, candidates: BackfillCandidate[], budget: number, now: number): Promise<{ requeued: number; skipped: number } | null> {
  const { store, router, clock, leaseMs } = parts;
  const toRun = candidates.filter((c) => !c.handled).slice(0, budget).map((c) => c.delivery.eventId);
  const plan = planPage({
    candidates,
    budget,
    handler: h.def.name,
    handlersFor: (type) => router.handlersFor(type).map((x) => x.name),
    ledger: toRun.length > 0 ? await store.handlerRuns(toRun) : [],
    orderOf: orderOf(parts.ordering, h.def),
  });
  const stepAt = clock();
  const b = h.backfill;
  const doneBefore = b.requeued + b.skipped;
  // The first step here starts the rate's window where the lease was taken.
  const recent = nextRecent(b.recent.length > 0 ? b.recent : [[now, doneBefore]], stepAt, doneBefore + plan.passed);
  const result = await store.requeueForBackfill({
    backfill: { id: b.id, claimId: b.lease!.claimId, step: b.step },
    now: stepAt,
    leaseMs,
    deliveries: plan.deliveries,
    passed: plan.passed,
    cursor: plan.cursor!,
    recent,
  });
  if (!result.advanced) return null;
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
  return { requeued: result.requeued, skipped };
}

/**
 * The receiver's side of backfills, one step at a time: whichever dispatching receiver holds a
 * running backfill's lease requeues its deliveries, page by page from its cursor, for its own
 * dispatcher, which runs the handler as it runs live deliveries (order, leases, retries, run
 * history, dead letters). Each step says when the next may run; a scheduler of the runtime's
 * (Node: `scheduleBackfills`; the Worker: its cron) runs them.
 */
export function createBackfillStepper(options: BackfillStepperOptions): BackfillStepper {
  const { store, router, dispatcher, owner, clock, logger, leaseMs } = options;
  let held: HeldBackfill | null = null;
  let claims = 0;
  const names = router.handlers.map((h) => h.name);
  const newClaim = () => `${owner}.backfill.${++claims}`;

  async function step({ budget: given }: { budget?: number } = {}): Promise<BackfillStepResult> {
    held ??= await claimBackfill({ store, router, owner, clock, logger, leaseMs, newClaim });
    const h = held;
    if (!h) return { kind: 'idle', nextMs: LOOK_EVERY_MS };
    const { id } = h.backfill;
    const now = clock();
    const lost = (): BackfillStepResult => {
      held = null;
      logger.info({ backfill_id: id }, 'backfill no longer held here (cancelled, finished or taken over)');
      return { kind: 'lost', id, nextMs: 0 }; // look for another at once
    };
    const { budget, nextMs } = budgetOf(options, h, now, given);
    if (budget === 0) return (await keepLease(options, h, now)) ? { kind: 'waiting', id, nextMs: STEP_EVERY_MS } : lost();

    const candidates = await store.backfillPage(h.selection, h.backfill.cursor, BACKFILL_PAGE);
    if (candidates.length === 0) {
      held = null;
      if (!(await store.finishBackfill({ id, claimId: h.backfill.lease!.claimId, now: clock(), state: 'done' }))) return lost();
      logger.info({ backfill_id: id, handler: h.def.name, requeued: h.backfill.requeued, skipped: h.backfill.skipped }, 'backfill done');
      return { kind: 'finished', id, state: 'done', nextMs: 0 };
    }
    const page = await requeuePage(options, h, candidates, budget, now);
    if (!page) return lost();
    if (page.requeued > 0) dispatcher.wake();
    return { kind: 'requeued', id, ...page, nextMs };
  }

  return {
    step,
    async register() {
      await store.registerHandlers(names, clock());
    },
    get holding() {
      return held !== null;
    },
    async release() {
      const h = held;
      held = null;
      // Given back: another receiver (or this one's restart) goes on from the cursor at once.
      if (h) await store.renewBackfill({ id: h.backfill.id, claimId: h.backfill.lease!.claimId, until: clock() - 1 }).catch(() => false);
    },
  };
}
