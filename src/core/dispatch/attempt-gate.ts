import type { DispatchOutcome } from '../delivery-store.js';
import type { Delivery } from '../delivery.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Logger } from '../observability/logger.js';
import type { DispatchEvents } from './dispatch-events.js';
import type { HandlerResult } from './handler-result.js';
import type { GateContext } from '../runner/handler-runner.js';

/** One pending handler of an attempt, as a gate decided it. */
export type GateStep =
  /** Runs now, with what the gate adds to its context. */
  | { kind: 'run'; handler: HandlerDefinition; context?: GateContext }
  /** Not run: settled by the gate itself (a stale run skipped, a run the gate could not place). */
  | { kind: 'settled'; handler: HandlerDefinition; result: HandlerResult }
  /** Not now: the attempt leaves it for later, and the delivery is due again at `until` at the latest. */
  | { kind: 'wait'; handler: HandlerDefinition; until: number; /** What it waits for, for people: `waits for <event id>`. */ reason: string };

/** What a gate decided for one attempt. */
export interface GatePlan {
  steps: readonly GateStep[];
  /**
   * Settles what the gate holds into the outcome about to be written (before `completeDispatch`,
   * fenced by the same claim). Returns true when that write makes other work due at once (a drain follows it).
   */
  settle?(outcome: DispatchOutcome, succeeded: (handler: string) => boolean): boolean;
}

/** What a gate is asked for one attempt. */
export interface GateInput {
  delivery: Delivery;
  /** The body as parsed (JSON), parsed when first asked: a gate that reads the payload asks (it may throw an `InvalidBodyError`). */
  payload: () => unknown;
  /** The handlers this attempt would run (the ledger's successes left out). */
  pending: readonly HandlerDefinition[];
  now: number;
  attemptOf(handler: HandlerDefinition): number;
  /** Where the gate reports what it settles (a skip is a `handlerFinished`). */
  events: DispatchEvents;
  logger: Logger;
}

/**
 * Decides, per attempt, what runs, what waits and what is settled without a run: a strategy the
 * dispatcher and `podhook replay` share. Ordered handlers are one gate (src/core/order/).
 */
export interface AttemptGate {
  /** The attempt's plan, or null: every pending handler runs now and nothing is settled. */
  open(input: GateInput): Promise<GatePlan | null> | GatePlan | null;
}

/** The default gate: every pending handler runs now. */
export const PASS_THROUGH_GATE: AttemptGate = { open: () => null };
