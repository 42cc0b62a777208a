import type { Clock } from '../clock.js';
import type { DispatchStore } from '../delivery-store.js';
import type { LeaseGrant } from '../delivery.js';
import type { Logger } from '../observability/logger.js';

export interface LeaseKeeperOptions {
  store: Pick<DispatchStore, 'renewLeases'>;
  owner: string;
  logger: Logger;
  clock: Clock;
  /** How long a lease lasts from when it is taken or renewed. */
  leaseMs: number;
  /** How often held leases are checked; a lease older than this is renewed (default a third of `leaseMs`). */
  renewEveryMs?: number;
  /** A lease was lost (taken over, or about to run out unrenewed): its handlers must stop. */
  onLost(eventId: string, reason: LeaseLoss, error: Error): void;
}

/** Why a lease was lost: another claim holds the row, or it could not be renewed in time. */
export type LeaseLoss = 'taken_over' | 'not_renewed';

/** The leases one dispatcher holds, each under its own claim id, renewed while its handlers run. */
export interface LeaseKeeper {
  /** A new claim id: `<owner>.<n>`, unique across replicas as the owner is. */
  newClaim(): string;
  /** A lease for a delivery about to be inserted (hand-off); `hold` it once the insert commits. */
  grant(): LeaseGrant;
  /** Keeps a lease taken under `claimId` until `release`, renewing it as it ages. */
  hold(eventId: string, claimId: string, until: number): void;
  /** The claim under which this delivery is held, or undefined when it is not (or no longer) held. */
  claimOf(eventId: string): string | undefined;
  /** The delivery is done (outcome written or given up): stop renewing its lease. */
  release(eventId: string, claimId: string): void;
  /** Forgets every lease and stops renewing (shutdown; the store gives them back). */
  clear(): void;
  /** Renews now, as the timer does (tests). */
  renew(): Promise<void>;
  /** Leases kept (lost ones included until released): what the renewal timer looks after. */
  readonly size: number;
}

interface Held {
  claimId: string;
  until: number;
  lost: boolean;
}

/**
 * Short leases, renewed: a killed replica's work is free after `leaseMs`, while a handler that
 * runs longer keeps its lease. The claim id fences: a dispatcher that lost its lease (paused,
 * partitioned) can neither renew it nor, in the store, record an outcome over the new claim.
 */
export function createLeaseKeeper({ store, owner, logger, clock, leaseMs, renewEveryMs = Math.floor(leaseMs / 3), onLost }: LeaseKeeperOptions): LeaseKeeper {
  const held = new Map<string, Held>();
  let seq = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  function arm() {
    if (timer !== undefined || stopped || held.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      void renew().finally(arm);
    }, renewEveryMs);
    // On Node a pending renewal does not keep a stopping process alive.
    (timer as { unref?: () => void }).unref?.();
  }

  function lose(eventId: string, h: Held, why: LeaseLoss) {
    h.lost = true;
    logger.warn({ event_id: eventId, claim_id: h.claimId, reason: why }, 'lease lost: this replica records no outcome for it');
    onLost(eventId, why, new Error(`lease lost (${why === 'taken_over' ? 'another claim holds it' : 'not renewed in time'})`));
  }

  async function renew() {
    const now = clock();
    const due: { eventId: string; claimId: string }[] = [];
    // A lease taken within the last interval has most of its time left: only older ones are renewed.
    for (const [eventId, h] of held) if (!h.lost && h.until - now <= leaseMs - renewEveryMs) due.push({ eventId, claimId: h.claimId });
    if (due.length > 0) {
      const until = now + leaseMs;
      try {
        const kept = new Set(await store.renewLeases({ leases: due, until }));
        for (const l of due) {
          const h = held.get(l.eventId);
          if (!h || h.claimId !== l.claimId || h.lost) continue;
          if (kept.has(l.eventId)) h.until = until;
          else lose(l.eventId, h, 'taken_over');
        }
      } catch (error) {
        logger.warn({ err: (error as Error).message, leases: due.length }, 'could not renew leases');
      }
    }
    // One that would run out before the next renewal stops now, before another replica may take it.
    const after = clock();
    for (const [eventId, h] of held) if (!h.lost && h.until - after <= renewEveryMs) lose(eventId, h, 'not_renewed');
  }

  const newClaim = () => `${owner}.${(++seq).toString(36)}`;
  return {
    newClaim,
    grant() {
      return { owner, claimId: newClaim(), until: clock() + leaseMs };
    },
    hold(eventId, claimId, until) {
      held.set(eventId, { claimId, until, lost: false });
      arm();
    },
    claimOf(eventId) {
      const h = held.get(eventId);
      return h && !h.lost ? h.claimId : undefined;
    },
    release(eventId, claimId) {
      if (held.get(eventId)?.claimId === claimId) held.delete(eventId);
    },
    clear() {
      stopped = true;
      held.clear();
      clearTimeout(timer);
      timer = undefined;
    },
    renew,
    get size() {
      return held.size;
    },
  };
}
