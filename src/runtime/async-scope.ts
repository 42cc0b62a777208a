import { AsyncLocalStorage } from 'node:async_hooks';
import type { CallScope, StepFrame } from '../core/runner/job-runner.js';
import type { RunningCall } from '../core/runner/running-call.js';

/** What code runs as, in its async context: a handler's call, and inside a step's function that step. */
interface Frame {
  call?: RunningCall;
  step?: StepFrame;
}

export interface AsyncScope extends CallScope {
  /** The call whose code runs now (in a handler thread's or a stray error's async context), if any. */
  currentCall(): RunningCall | undefined;
}

/**
 * The runner's scope on an `AsyncLocalStorage` (Node, and the Worker under `nodejs_compat`): a
 * step's function runs as that step (a `ctx.step` inside it is refused as nested; a `ctx.pods`
 * call inside it takes the step's request id, even with other steps running beside it). With
 * `calls`, each handler call's code runs as that call too, so an error it leaves behind is tied to
 * it (Node's handler threads and `podhook serve`). Without `calls`, nothing is tracked until a step
 * runs: a deployment whose handlers use no steps pays nothing for it.
 */
export function createAsyncScope({ calls = false }: { calls?: boolean } = {}): AsyncScope {
  const frames = new AsyncLocalStorage<Frame>();
  return {
    ...(calls && { enter: <T>(call: RunningCall, fn: () => T): T => frames.run({ call }, fn) }),
    inStep: (step, fn) => frames.run({ ...frames.getStore(), step }, fn),
    step: () => frames.getStore()?.step,
    currentCall: () => frames.getStore()?.call,
  } as AsyncScope;
}
