import type { RunningCall } from './running-call.js';

/** A step whose function runs: its run's steps, its name and key, and the calls to the service it made so far. */
export interface StepFrame {
  owner: object;
  name: string;
  key: string;
  calls: number;
}

/**
 * Where a call's code runs. Node's scope ties the errors a handler's code leaves behind (a throw
 * in a timer, a rejection nothing awaited) to its call (an `AsyncLocalStorage`), so they fail that
 * call, and tells a stuck thread's watchdog which call loops.
 */
export interface CallScope {
  /** Runs `fn` (the handler's first synchronous part) as `call`'s code. */
  enter?<T>(call: RunningCall, fn: () => T): T;
  /** Runs a step's function as that step's code: what it calls (a nested `ctx.step`, `ctx.pods`) knows which step it is in. */
  inStep?<T>(step: StepFrame, fn: () => T): T;
  /** The step whose function runs now, in this async context (undefined: none, or no way to tell). */
  step?(): StepFrame | undefined;
  /** Resolves once an error left behind by code that just finished would have been reported (one turn of the loop). */
  settled?(): Promise<void>;
}
