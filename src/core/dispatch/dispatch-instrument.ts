import type { Delivery } from '../delivery.js';
import type { DispatchSubscriber } from './dispatch-events.js';
import type { RunHandler } from './handler-runner.js';

/** An attempt of a stored delivery as an instrument wraps it (the dispatcher's, or a replay's). */
export type AttemptRun<A extends [Delivery, ...unknown[]], R> = (...args: A) => Promise<R>;

/**
 * Something that watches dispatch (metrics, alerts, traces): it subscribes to the events, and may
 * wrap each attempt and each handler call (a span around them, active while the handler's code
 * runs). A feature that is off contributes no instrument at all.
 */
export interface DispatchInstrument {
  subscriber?: DispatchSubscriber;
  /** Wraps each attempt; `outcomeOf` names how one ended from its result, where the result says it. */
  attempt?<A extends [Delivery, ...unknown[]], R>(run: AttemptRun<A, R>, outcomeOf?: (result: R) => string): AttemptRun<A, R>;
  /** Wraps each handler call. */
  handler?(run: RunHandler): RunHandler;
}

/** Applies each instrument's wrapper of one kind, the first given outermost. */
export function instrumentAttempt<A extends [Delivery, ...unknown[]], R>(
  instruments: readonly DispatchInstrument[],
  run: AttemptRun<A, R>,
  outcomeOf?: (result: R) => string,
): AttemptRun<A, R> {
  return instruments.reduceRight<AttemptRun<A, R>>((inner, i) => (i.attempt ? i.attempt(inner, outcomeOf) : inner), run);
}

export function instrumentHandler(instruments: readonly DispatchInstrument[], run: RunHandler): RunHandler {
  return instruments.reduceRight<RunHandler>((inner, i) => (i.handler ? i.handler(inner) : inner), run);
}
