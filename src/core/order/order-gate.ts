import type { OrderFinish, OrderStore } from '../delivery-store.js';
import type { OrderEntry } from '../delivery.js';
import type { AttemptGate, GateInput, GatePlan, GateStep } from '../dispatch/attempt-gate.js';
import { settledResult } from '../dispatch/handler-result.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import { eventOf } from '../events/event-of.js';
import type { Ordering } from './ordering.js';
import type { OrderContext } from './order-types.js';

/** One pending handler of an attempt, as the order decided it. */
type OrderStep =
  /** Runs now; `order` for an ordered handler (its `entry` when the key is set). */
  | { kind: 'run'; handler: HandlerDefinition; order?: OrderContext; entry?: OrderEntry }
  /** Stale and `stale: 'skip'`: not run, recorded as skipped for the newer event. */
  | { kind: 'skip'; handler: HandlerDefinition; entry: OrderEntry; newer: string }
  /**
   * Not now: another delivery of its key runs or comes first (`waitingOn`), or (`hold`) the hold
   * is not over, which the gate sees without asking the store.
   */
  | { kind: 'wait'; handler: HandlerDefinition; entry: OrderEntry; until: number; waitingOn: string | null; hold?: true }
  /** Its `order.key` or `order.at` threw: the run fails with that error. */
  | { kind: 'broken'; handler: HandlerDefinition; error: string };

/** How long a delivery waiting on another waits before it looks again by itself (the other's outcome wakes it sooner). */
export function recheckAfter(now: number, receivedAt: number): number {
  return Math.min(5 * 60_000, Math.max(1_000, Math.floor((now - receivedAt) / 2)));
}

export interface OrderGateOptions {
  store: Pick<OrderStore, 'startOrdered'>;
  ordering: Ordering;
  /** Deliveries received within this of each other are put in `at` order before any runs (a replay: 0, it is no burst). */
  holdMs?: number;
}

/**
 * The order as an attempt gate: an ordered handler runs when its key is free and nothing earlier
 * of its key is pending (the store's `startOrdered`), after the hold; a stale one runs with
 * `order.stale` or is skipped; its rows are settled with the outcome. One store call for all of a
 * delivery's ordered handlers, none when it has none.
 */
export function createOrderGate({ store, ordering, holdMs = ordering.holdMs }: OrderGateOptions): AttemptGate {
  return {
    async open(input) {
      if (!input.pending.some((h) => ordering.spec(h.name))) return null;
      const steps = await orderSteps(store, ordering, holdMs, input);
      const plan: GatePlan = {
        steps: steps.map((s) => toGateStep(s, input)),
        settle(outcome, succeeded) {
          outcome.order = orderFinishes(steps, succeeded, outcome.status === 'dead', ordering.holdMs);
          // A woken next of the key is due now.
          return outcome.order.some((f) => f.state !== 'waiting' && f.state !== 'released');
        },
      };
      return plan;
    },
  };
}

function toGateStep(step: OrderStep, { delivery, attemptOf, events, logger }: GateInput): GateStep {
  const { handler } = step;
  switch (step.kind) {
    case 'run':
      if (step.order?.stale) events.emit('orderStale', handler.name, 'run');
      return step.order ? { kind: 'run', handler, context: { order: step.order } } : { kind: 'run', handler };
    case 'wait':
      return { kind: 'wait', handler, until: step.until, reason: `waits for ${step.waitingOn ?? 'its turn'}` };
    case 'skip':
      events.emit('orderStale', handler.name, 'skip');
      logger.info({ event_id: delivery.eventId, event_type: delivery.eventType, handler: handler.name, newer_event_id: step.newer }, 'handler skipped: stale');
      return { kind: 'settled', handler, result: settledResult(handler.name, attemptOf(handler), 'skipped', `stale: skipped, newer event ${step.newer} already ran`) };
    case 'broken':
      return { kind: 'settled', handler, result: settledResult(handler.name, attemptOf(handler), 'failed', step.error) };
  }
}

async function orderSteps(
  store: Pick<OrderStore, 'startOrdered'>,
  ordering: Ordering,
  holdMs: number,
  { delivery, payload, pending, now }: Pick<GateInput, 'delivery' | 'payload' | 'pending' | 'now'>,
): Promise<OrderStep[]> {
  const steps: OrderStep[] = [];
  const asks: { handler: HandlerDefinition; entry: OrderEntry; stale: 'run' | 'skip' }[] = [];
  const event = eventOf(delivery, payload(), 1);
  for (const handler of pending) {
    const spec = ordering.spec(handler.name);
    if (!spec) {
      steps.push({ kind: 'run', handler });
      continue;
    }
    let key: string | null;
    let at: number;
    try {
      key = spec.key(event);
      at = spec.at(event);
    } catch (error) {
      steps.push({ kind: 'broken', handler, error: `order: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` });
      continue;
    }
    if (key === null) {
      steps.push({ kind: 'run', handler, order: { key: null, at: new Date(at), stale: false } });
      continue;
    }
    const entry = { handler: handler.name, key, at };
    const holdEnds = delivery.receivedAt + holdMs;
    if (now < holdEnds) steps.push({ kind: 'wait', handler, entry, until: holdEnds, waitingOn: null, hold: true });
    else asks.push({ handler, entry, stale: spec.stale });
  }
  if (asks.length === 0) return steps;
  const answers = await store.startOrdered({ eventId: delivery.eventId, receivedAt: delivery.receivedAt, now, starts: asks.map((a) => a.entry) });
  for (const { handler, entry, stale } of asks) {
    const answer = answers.find((a) => a.handler === handler.name)!;
    if (!answer.started) {
      steps.push({ kind: 'wait', handler, entry, until: now + recheckAfter(now, delivery.receivedAt), waitingOn: answer.waitingOn });
      continue;
    }
    const newest = answer.newest && answer.newest.eventId !== delivery.eventId ? answer.newest : null;
    const isStale = newest !== null && newest.at > entry.at;
    if (isStale && stale === 'skip') {
      steps.push({ kind: 'skip', handler, entry, newer: newest.eventId });
      continue;
    }
    const order: OrderContext = { key: entry.key, at: new Date(entry.at), stale: isStale };
    if (isStale) order.newest = { eventId: newest.eventId, at: new Date(newest.at) };
    steps.push({ kind: 'run', handler, order, entry });
  }
  return steps;
}

/**
 * How an attempt's outcome settles each ordered handler's row (see `OrderFinish`). A wait for the
 * hold settles nothing: the outcome makes the delivery due when the hold ends, and nothing that
 * happens meanwhile can make it due sooner (a woken key's next is due at its hold's end at the earliest).
 */
function orderFinishes(steps: readonly OrderStep[], succeeded: (handler: string) => boolean, dead: boolean, holdMs: number): OrderFinish[] {
  const finishes: OrderFinish[] = [];
  for (const s of steps) {
    if (s.kind === 'broken' || !('entry' in s) || !s.entry || (s.kind === 'wait' && s.hold && !dead)) continue;
    const state: OrderFinish['state'] =
      s.kind === 'skip' ? 'skipped' : dead ? 'dead' : s.kind === 'wait' ? 'waiting' : succeeded(s.handler.name) ? 'done' : 'released';
    finishes.push({ ...s.entry, state, holdMs });
  }
  return finishes;
}
