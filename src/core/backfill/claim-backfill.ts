import type { Clock } from '../clock.js';
import type { Router } from '../dispatch/router.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Logger } from '../observability/logger.js';
import type { Backfill, BackfillSelection, BackfillStore } from './backfill-store.js';
import type { RateBucket } from './pacing.js';
import { firstSeen, typesOf } from './start-backfill.js';

/** A backfill this receiver holds the lease of, with what its steps need. */
export interface HeldBackfill {
  backfill: Backfill;
  def: HandlerDefinition;
  selection: BackfillSelection;
  rate?: RateBucket;
}

export interface ClaimBackfillOptions {
  store: Pick<BackfillStore, 'listBackfills' | 'claimBackfill' | 'resolveBackfill' | 'finishBackfill' | 'countBackfill' | 'handlerRegistrations'>;
  router: Router;
  owner: string;
  clock: Clock;
  logger: Logger;
  leaseMs: number;
  /** A fresh claim id for each lease taken. */
  newClaim: () => string;
}

/**
 * Takes the lease of the oldest running backfill of a handler this receiver has that no other
 * receiver holds (free, run out, or already this receiver's own), resolving where its history
 * ends when it was started before the handler ever ran. Null when there is none.
 */
export async function claimBackfill({ store, router, owner, clock, logger, leaseMs, newClaim }: ClaimBackfillOptions): Promise<HeldBackfill | null> {
  const names = new Set(router.handlers.map((h) => h.name));
  const running = (await store.listBackfills({ state: 'running', limit: 100 })).filter((b) => names.has(b.handler)).reverse();
  for (const candidate of running) {
    const now = clock();
    if (candidate.lease && candidate.lease.until >= now && candidate.lease.owner !== owner) continue;
    const claimId = newClaim();
    const b = await store.claimBackfill({ id: candidate.id, owner, claimId, now, leaseMs });
    if (!b) continue;
    const def = router.handlers.find((h) => h.name === b.handler)!;
    const seen = await firstSeen(store, def.name);
    const types = typesOf(def, b.eventType);
    if (types.length === 0) {
      await store.finishBackfill({ id: b.id, claimId, now, state: 'failed', error: `${def.name} does not take ${b.eventType} here` });
      logger.warn({ backfill_id: b.id, handler: def.name, event_type: b.eventType }, 'backfill failed: its handler does not take its type here');
      continue;
    }
    let backfill = b;
    if (b.until === null) {
      // Started before the handler ever ran: history ends where this receiver (or an earlier one) first ran it.
      const until = seen ?? now;
      const counts = await store.countBackfill({ handler: def.name, types, since: b.since, until, firstSeenAt: seen });
      if (!(await store.resolveBackfill({ id: b.id, claimId, until, total: counts.matching, now }))) continue;
      backfill = { ...b, until, total: counts.matching };
    }
    logger.info({ backfill_id: b.id, handler: def.name, step: b.step, resumed: b.step > 0 }, 'backfill taken: running it here');
    return { backfill, def, selection: { handler: def.name, types, since: backfill.since, until: backfill.until!, firstSeenAt: seen } };
  }
  return null;
}
