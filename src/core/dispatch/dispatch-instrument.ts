import type { Delivery } from '../delivery.js';
import type { DispatchSubscriber } from './dispatch-events.js';
import type { CallWrapper } from '../runner/handler-runner.js';

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
  /** Wraps each handler call (runs `run` once, synchronously, inside whatever it sets up). */
  call?: CallWrapper;
  /** Wraps each durable step's function, in the thread that runs it. */
  step?: <T>(name: string, seq: number, fn: () => Promise<T>) => Promise<T>;
}

/** Applies each instrument's wrapper of one kind, the first given outermost. */
export function instrumentAttempt<A extends [Delivery, ...unknown[]], R>(
  instruments: readonly DispatchInstrument[],
  run: AttemptRun<A, R>,
  outcomeOf?: (result: R) => string,
): AttemptRun<A, R> {
  return instruments.reduceRight<AttemptRun<A, R>>((inner, i) => (i.attempt ? i.attempt(inner, outcomeOf) : inner), run);
}

/** The instruments' call wrappers as one, the first given outermost; undefined when none wraps calls. */
export function instrumentCalls(instruments: readonly DispatchInstrument[]): CallWrapper | undefined {
  const wrappers = instruments.flatMap((i) => (i.call ? [i.call] : []));
  if (wrappers.length === 0) return undefined;
  return wrappers.slice(0, -1).reduceRight<CallWrapper>((inner, outer) => (call, delivery, run) => outer(call, delivery, () => inner(call, delivery, run)), wrappers.at(-1)!);
}

/** The instruments' step wrappers as one; undefined when none wraps steps. */
export function instrumentSteps(instruments: readonly DispatchInstrument[]): DispatchInstrument['step'] {
  const wrappers = instruments.flatMap((i) => (i.step ? [i.step] : []));
  if (wrappers.length === 0) return undefined;
  return <T>(name: string, seq: number, fn: () => Promise<T>): Promise<T> =>
    wrappers.reduceRight<() => Promise<T>>((inner, outer) => () => outer(name, seq, inner), fn)();
}
