import type { ClaimResult, NewDelivery } from '../delivery.js';
import type { Dispatcher } from './dispatcher.js';

/**
 * Wraps a claim so a new delivery goes straight to this process's dispatcher: the lease is
 * written with the insert (no separate lease statement, no re-read of the row) and the handlers
 * start as soon as the commit is durable. At capacity the delivery is stored unleased and the
 * dispatcher is woken to lease it when a slot frees. Duplicates and conflicts give the slot back.
 */
export function withHandOff(
  claim: (delivery: NewDelivery) => Promise<ClaimResult>,
  dispatcher: Pick<Dispatcher, 'reserve' | 'adopt' | 'release' | 'wake'>,
  /** Runs the adoption after the caller's answer is on its way (Node: setImmediate). */
  defer: (fn: () => void) => void = (fn) => void setTimeout(fn, 0),
): (delivery: NewDelivery) => Promise<ClaimResult> {
  return async function claimAndHandOff(delivery) {
    const grant = delivery.status === 'queued' ? dispatcher.reserve() : null;
    let result: ClaimResult;
    try {
      // Not `{ ...delivery, lease: grant }`: on Node 20's V8 a property after a spread gives every
      // copy a hidden class of its own (a new map per delivery, and 3 KB a delivery promoted to
      // the old generation with handlers off: bench/profile.ts --gc).
      result = await claim(grant ? Object.assign({}, delivery, { lease: grant }) : delivery);
    } catch (error) {
      if (grant) dispatcher.release(grant);
      throw error;
    }
    if (grant) {
      if (result.outcome === 'new') {
        // The HTTP response never waits for handlers.
        defer(() => dispatcher.adopt(grant, delivery));
      } else {
        dispatcher.release(grant);
      }
    } else if (result.outcome === 'new' && delivery.status === 'queued') {
      dispatcher.wake();
    }
    return result;
  };
}
