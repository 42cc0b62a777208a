import type { BackfillStore } from './backfill-store.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import { typesOf } from './start-backfill.js';

/** A handler that has never run on some stored deliveries of its types (it was added later, or has not run yet). */
export interface HistoryGap {
  handler: string;
  /** When a dispatching receiver first ran with it (epoch ms), or null: never yet. */
  firstSeenAt: number | null;
  /** Stored deliveries of its types it never ran on: what `podhook backfill NAME` would run it on. */
  notRun: number;
}

/** The handlers a backfill would catch up, with how many deliveries each (`podhook handlers`). */
export async function historyGaps(
  store: Pick<BackfillStore, 'handlerRegistrations' | 'countBackfill'>,
  handlers: readonly HandlerDefinition[],
  now: number,
): Promise<HistoryGap[]> {
  const seen = new Map((await store.handlerRegistrations()).map((r) => [r.handler, r.firstSeenAt]));
  const gaps: HistoryGap[] = [];
  for (const h of handlers) {
    const firstSeenAt = seen.get(h.name) ?? null;
    const { matching, handled } = await store.countBackfill({ handler: h.name, types: typesOf(h), since: null, until: firstSeenAt ?? now, firstSeenAt });
    if (matching > handled) gaps.push({ handler: h.name, firstSeenAt, notRun: matching - handled });
  }
  return gaps;
}
