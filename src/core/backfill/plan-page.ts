import type { HandlerRun } from '../delivery-store.js';
import type { Delivery, OrderEntry } from '../delivery.js';
import type { BackfillCandidate, BackfillCursor, BackfillStep } from './backfill-store.js';

export interface PagePlanOptions {
  /** The page as read, oldest first. */
  candidates: readonly BackfillCandidate[];
  /** Deliveries the handler may be run on in this step. */
  budget: number;
  /** The backfill's handler. */
  handler: string;
  /** The handlers that take a type now, in registration order. */
  handlersFor(type: string): readonly string[];
  /** The ledger rows of the deliveries to run. */
  ledger: readonly HandlerRun[];
  /** The handler's ordered rows for a delivery (an ordered handler), else undefined. */
  orderOf?(delivery: Delivery): readonly OrderEntry[] | undefined;
}

export interface PagePlan {
  deliveries: BackfillStep['deliveries'];
  /** Deliveries passed: those to run and the already handled ones among them. */
  passed: number;
  /** The last one passed; null when nothing was. */
  cursor: BackfillCursor | null;
}

/**
 * Which of a page's deliveries a step passes: in order, the handled ones (skipped) and up to
 * `budget` to run, stopping before the first one beyond it, so the cursor never passes a delivery
 * that was not handed over. Pure.
 */
export function takeFromPage(candidates: readonly BackfillCandidate[], budget: number): BackfillCandidate[] {
  const taken: BackfillCandidate[] = [];
  let toRun = 0;
  for (const c of candidates) {
    if (!c.handled && toRun === budget) break;
    if (!c.handled) toRun++;
    taken.push(c);
  }
  return taken;
}

/**
 * The ledger rows that make the dispatcher run the backfill's handler alone on a delivery: the
 * handler `queued` (its attempts follow on from its row), and each other handler of the type that
 * has no row `succeeded`, so it does not run: with the delivery's attempts when it was processed at
 * its first attempt (no rows: they all ran), else 0 (it never ran; its own backfill still finds
 * it). A handler's existing row is kept. Pure.
 */
export function ledgerMarks(d: Pick<Delivery, 'status' | 'attempts' | 'eventType'>, handler: string, handlers: readonly string[], rows: readonly HandlerRun[]): BackfillStep['deliveries'][number]['runs'] {
  const marks: { handler: string; status: 'queued' | 'succeeded'; attempts: number }[] = [
    { handler, status: 'queued', attempts: rows.find((r) => r.handler === handler)?.attempts ?? 0 },
  ];
  for (const other of handlers) {
    if (other === handler || rows.some((r) => r.handler === other)) continue;
    marks.push({ handler: other, status: 'succeeded', attempts: d.status === 'processed' && rows.length === 0 ? d.attempts : 0 });
  }
  return marks;
}

/** A step's plan from its page: what to run, with its ledger and ordered rows, and the new cursor. */
export function planPage({ candidates, budget, handler, handlersFor, ledger, orderOf }: PagePlanOptions): PagePlan {
  const taken = takeFromPage(candidates, budget);
  const last = taken.at(-1)?.delivery;
  return {
    deliveries: taken
      .filter((c) => !c.handled)
      .map(({ delivery: d }) => {
        const order = orderOf?.(d);
        return {
          eventId: d.eventId,
          runs: ledgerMarks(d, handler, handlersFor(d.eventType), ledger.filter((r) => r.eventId === d.eventId)),
          ...(order && order.length > 0 ? { order } : {}),
        };
      }),
    passed: taken.length,
    cursor: last ? { receivedAt: last.receivedAt, eventId: last.eventId } : null,
  };
}
