import type { ListPodsQuery, PodsCallOptions, PodsClient } from './pods-client.js';
import { walkPages } from './pods-pages.js';

/** What a run tells its `ctx.pods`: the request id of the step running now, its time left, its signal. */
export interface PodsRun {
  /** The next call's request id, derived from the step running now (`HandlerSteps.nextRequestId`), or undefined. */
  requestId(): string | undefined;
  /** The handler's time left: a call waits for its bucket at most half of it (`waitBudgetMs`), else the run is parked. */
  timeLeftMs(): number;
  signal: AbortSignal;
}

/**
 * The longest a handler's call waits for its bucket: half its time left. The other half is for the
 * request and the code after it. A call that waited up to the time limit itself would send its
 * request as the run times out: the service acts on it, the step records nothing, and the retried
 * step sends it again (the same request id, but nothing in the spec says the service drops a
 * repeated one). A token further off parks the run instead, which costs no attempt.
 */
export function waitBudgetMs(timeLeftMs: number): number {
  return Math.max(0, Math.floor(timeLeftMs / 2));
}

/**
 * A handler's `ctx.pods`: the deployment's pod client (`client`, made once and shared), with each
 * call's options filled from the run: inside `ctx.step` its `x-request-id` follows the step's
 * idempotency key (the same in every run of the step), it waits for its bucket at most half the
 * handler's time left (`waitBudgetMs`; else `PodsRateLimited`, which parks the run), and it ends
 * with the handler's signal. What a call passes itself wins.
 */
export function handlerPods(client: () => Promise<PodsClient>, run: PodsRun): PodsClient {
  const options = (given: PodsCallOptions = {}): PodsCallOptions => ({
    ...given,
    requestId: given.requestId ?? run.requestId(),
    maxWaitMs: given.maxWaitMs ?? waitBudgetMs(run.timeLeftMs()),
    signal: given.signal ?? run.signal,
  });
  const list = async (query?: ListPodsQuery, o?: PodsCallOptions) => (await client()).list(query, options(o));
  return {
    list,
    // Page by page through `list`, so a walk inside a step sends the same ids again (`<id>.<page>`).
    pages: (query = {}, { maxPages, ...o } = {}) =>
      walkPages((q, requestId) => list(q, { ...o, requestId }), query, { requestId: o.requestId ?? run.requestId(), maxPages }),
    queueAction: async (podId, action, o) => (await client()).queueAction(podId, action, options(o)),
    actions: async (podId, o) => (await client()).actions(podId, options(o)),
    lastResult: async (podId, o) => (await client()).lastResult(podId, options(o)),
    mintKey: async (podId, o) => (await client()).mintKey(podId, { ...o, ...options(o) }),
    chatTicket: async (podId, o) => (await client()).chatTicket(podId, options(o)),
  };
}
