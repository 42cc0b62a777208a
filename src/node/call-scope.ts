import type { RunningCall } from '../core/runner/running-call.js';
import { createAsyncScope, type AsyncScope } from '../runtime/async-scope.js';

/** An exception or a rejection nothing caught, left behind by code. */
export type StrayKind = 'uncaught_exception' | 'unhandled_rejection';

/** What a stray error is told with: its kind, the error, the call it came from (its async context) and whether that call was still running. */
export interface Stray {
  kind: StrayKind;
  error: unknown;
  /** The call whose code left it, when one can be named. */
  call?: RunningCall;
  /** That call had not ended, and this error ended it as its failure. */
  failedRun: boolean;
}

/** A key on `globalThis` under which a stuck thread's watchdog reads which call's code runs (node/handler-threads/stuck-call.ts). */
export const RUNNING_CALL_KEY = Symbol.for('podhook.runningCall');

/**
 * The call scope of Node (in a handler thread, or in the receiver's thread under `podhook serve`
 * with HANDLER_THREADS=0): each call's code runs in its own async context (src/runtime/async-scope.ts),
 * so an exception a timer of its throws, or a rejection it left unawaited, fails that call as its
 * own throw would (and is told to `onStray`, which logs and counts it). The process's handlers are
 * installed once, by `install`. What no call's context owns is told with no call.
 *
 * While nothing is stuck this costs what `AsyncLocalStorage` costs; nothing more is kept per
 * callback. A watchdog that finds the thread stuck reads `globalThis[RUNNING_CALL_KEY]()` while the
 * thread is paused (the inspector), which names the call whose code loops.
 */
export function createNodeCallScope(onStray: (stray: Stray) => void): AsyncScope & { install(): void } {
  const scope = createAsyncScope({ calls: true });
  (globalThis as Record<symbol, unknown>)[RUNNING_CALL_KEY] = () => {
    const call = scope.currentCall();
    return call && { eventId: call.eventId, index: call.index };
  };
  const stray = (kind: StrayKind, error: unknown) => {
    const call = scope.currentCall();
    const failedRun = call !== undefined && !call.isEnded;
    // Failed as the call's own throw would: its signal fires, its run records the error.
    if (failedRun) call.end(error);
    onStray({ kind, error, call, failedRun });
  };
  return {
    ...scope,
    // A promise left to reject as the code returned is reported at the end of this turn.
    settled: () => new Promise<void>((resolve) => setImmediate(resolve)),
    install() {
      process.on('uncaughtException', (error) => stray('uncaught_exception', error));
      process.on('unhandledRejection', (reason) => stray('unhandled_rejection', reason));
    },
  };
}
