import type { Clock } from '../clock.js';
import type { Delivery, DispatchStore, HandlerRun } from '../delivery-store.js';
import type { Logger } from '../observability/logger.js';
import type { DispatchSlots } from './dispatch-slots.js';
import type { LeaseKeeper } from './lease-keeper.js';

export interface LeaseDrainOptions {
  store: Pick<DispatchStore, 'leaseDue' | 'handlerRuns'>;
  owner: string;
  leaseMs: number;
  clock: Clock;
  logger: Logger;
  leases: Pick<LeaseKeeper, 'newClaim' | 'hold'>;
  /** Sizes each lease statement (`leasable`) and runs what it leased. */
  slots: Pick<DispatchSlots, 'stopped' | 'leasable' | 'run'>;
}

/**
 * Whether an attempt ran for this delivery before (counted, or one that ended with a handler
 * waiting, which records what ran and the replica): only then can it have ledger rows to read.
 */
const ranBefore = (d: Delivery) => d.attempts > 0 || (d.ranBy !== null && d.ranBy !== undefined);

/** What the store holds for this dispatcher: retries due, deliveries stored unleased, leftovers of a crash. */
export interface LeaseDrain {
  /**
   * Starts a drain; while one runs, asks for one more after it (wakes coalesce into at most one
   * follow-up). Resolves with how many deliveries the drain started.
   */
  wake(): Promise<number>;
  /** The drain in progress, or null. */
  readonly current: Promise<number> | null;
  /**
   * Leases at most `count` deliveries from now on, over every drain (Infinity: no bound). A
   * Worker invocation's page: what it leases stays within D1's queries per invocation.
   */
  allow(count: number): void;
  /** Whether the allowance is spent: due work may be left for another invocation. */
  readonly spent: boolean;
}

/**
 * Leases due deliveries from the store, as many as there are free slots, under one claim id per
 * lease statement, reads the ledger of the retried ones, and runs them; again until none is
 * due or the slots are full (the next slot to free drains again). One drain at a time.
 */
export function createLeaseDrain({ store, owner, leaseMs, clock, logger, leases, slots }: LeaseDrainOptions): LeaseDrain {
  /** Lease statements failed in a row (the store unreachable). */
  let leaseFailures = 0;
  /** Deliveries the drains may still lease (`allow`). */
  let allowance = Infinity;

  /** Leases and starts due deliveries until none is left; resolves with how many it started. */
  async function drain(): Promise<number> {
    let started = 0;
    while (!slots.stopped && allowance > 0) {
      const limit = Math.min(slots.leasable(), allowance);
      if (limit === 0) return started; // the next dispatch to finish drains again
      let leased: Delivery[];
      let ledger: HandlerRun[];
      const claimId = leases.newClaim();
      try {
        const now = clock();
        leased = await store.leaseDue({ owner, claimId, now, leaseMs, limit });
        if (leaseFailures > 0) {
          logger.info({ failed_tries: leaseFailures }, 'dispatcher can lease deliveries again');
          leaseFailures = 0;
        }
        if (leased.length === 0) return started;
        allowance -= leased.length;
        // Ledger rows exist only once an attempt ran: new deliveries need no read.
        const retried = leased.filter(ranBefore).map((d) => d.eventId);
        ledger = retried.length > 0 ? await store.handlerRuns(retried) : [];
        for (const d of leased) leases.hold(d.eventId, claimId, now + leaseMs);
      } catch (error) {
        // Leases taken expire by themselves; the next wake or poll tries again. One line per
        // outage, not one per poll: the store's own health (readyz, 503) tells the rest.
        if (leaseFailures++ === 0) logger.error({ err: (error as Error).message }, 'dispatcher could not lease deliveries');
        return started;
      }
      for (const delivery of leased) {
        slots.run(delivery, ledger.length === 0 ? ledger : ledger.filter((r) => r.eventId === delivery.eventId));
        started++;
      }
    }
    return started;
  }

  let draining: Promise<number> | null = null;
  let again = false;
  function wake(): Promise<number> {
    if (slots.stopped) return Promise.resolve(0);
    if (draining) {
      again = true;
      return draining;
    }
    const current = drain().finally(() => {
      draining = null;
      if (again) {
        again = false;
        void wake();
      }
    });
    draining = current;
    return current;
  }

  return {
    wake,
    get current() {
      return draining;
    },
    allow(count) {
      allowance = count;
    },
    get spent() {
      return allowance <= 0;
    },
  };
}
