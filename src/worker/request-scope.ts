import { AsyncLocalStorage } from 'node:async_hooks';
import type { Dispatcher } from '../core/dispatch/dispatcher.js';

/**
 * What belongs to one Worker invocation (a `fetch`, a cron run) and must never reach another:
 * its `waitUntil`, and the dispatcher that holds its leases, timers and handlers in flight.
 * Workers cancel a request that waits on a promise another request created once that one ends,
 * and refuse I/O objects across requests; the isolate's wiring (built once) therefore keeps none
 * of these, and finds the current invocation's through AsyncLocalStorage (`nodejs_compat`).
 */
export interface RequestScope {
  /** The invocation's context: its `waitUntil`. */
  ctx: Pick<ExecutionContext, 'waitUntil'>;
  /** Deliveries this invocation's dispatcher runs at once, when not DISPATCH_CONCURRENCY (the cron's). */
  concurrency?: number;
  /** This invocation's dispatcher, made on its first use (`scopedDispatcher`). */
  dispatcher?: Dispatcher;
}

const scopes = new AsyncLocalStorage<RequestScope>();

/** Runs one invocation's work (and everything it starts, timers and `waitUntil` work included) in its scope. */
export function inRequest<T>(ctx: Pick<ExecutionContext, 'waitUntil'>, run: () => T, options: Pick<RequestScope, 'concurrency'> = {}): T {
  return scopes.run({ ctx, ...options }, run);
}

/** The invocation whose code is running now. */
export function currentRequest(): RequestScope {
  const scope = scopes.getStore();
  if (!scope) throw new Error('podhook: Worker code ran outside a request (inRequest)');
  return scope;
}

/** Keeps `work` alive past the answer, under the current invocation's `waitUntil`. */
export function waitUntil(work: Promise<unknown>): void {
  currentRequest().ctx.waitUntil(work);
}

/**
 * One dispatcher per invocation behind one object: each call goes to the current invocation's,
 * made by `make` on its first use. What the wiring holds for the isolate (the hand-off, the
 * backfill stepper, the admin API's wake) thus drives the dispatcher of the request it serves.
 */
export function scopedDispatcher(make: (tuning: { concurrency?: number }) => Dispatcher): Dispatcher {
  const current = () => {
    const scope = currentRequest();
    return (scope.dispatcher ??= make(scope.concurrency === undefined ? {} : { concurrency: scope.concurrency }));
  };
  return {
    get owner() {
      return current().owner;
    },
    get events() {
      return current().events;
    },
    wake: () => current().wake(),
    drained: () => current().drained(),
    load: () => current().load(),
    runUntilIdle: (budget) => current().runUntilIdle(budget),
    stop: (graceMs) => current().stop(graceMs),
    reserve: () => current().reserve(),
    adopt: (grant, delivery) => current().adopt(grant, delivery),
    release: (grant) => current().release(grant),
  };
}
