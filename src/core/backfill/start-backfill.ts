import { patternMatches } from '../dispatch/router.js';
import { InvalidRequestError } from '../errors.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import { EVENT_TYPES } from '../events/event-types.js';
import { isoTime } from '../steps/time-or-duration.js';
import type { Backfill, BackfillCounts, BackfillSelection, BackfillStore } from './backfill-store.js';

/** What `podhook backfill` and `POST /_podhook/api/backfills` ask for. */
export interface BackfillRequest {
  handler: string;
  /** Received at or after (epoch ms); default: the oldest stored delivery. */
  since?: number;
  /** Received before (epoch ms); default: when the handler was first seen running. */
  until?: number;
  /** One of the handler's event types; default: all of them. */
  type?: string;
  /** Deliveries per second at most; default: the pacing that leaves live deliveries alone. */
  rate?: number;
}

/** The largest `--rate`: beyond it the default pacing is the limit anyway. */
export const MAX_RATE = 10_000;

/** What a backfill would do: its selection (the end as known now) and the counts. */
export interface BackfillPlan {
  selection: BackfillSelection;
  counts: BackfillCounts;
  /** When the handler was first seen running on a dispatching receiver, or null: never yet. */
  firstSeenAt: number | null;
  /** The end the backfill keeps: the one asked for, else the handler's first start (null: resolved by the receiver that first runs it). */
  until: number | null;
}

/** The event types a handler takes, narrowed to `type` when given. */
export function typesOf(handler: Pick<HandlerDefinition, 'pattern'>, type?: string | null): string[] {
  return EVENT_TYPES.filter((t) => patternMatches(handler.pattern, t) && (type === undefined || type === null || t === type));
}

/** When a handler was first seen running, from the registrations. */
export async function firstSeen(store: Pick<BackfillStore, 'handlerRegistrations'>, handler: string): Promise<number | null> {
  return (await store.handlerRegistrations()).find((r) => r.handler === handler)?.firstSeenAt ?? null;
}

/**
 * Checks a backfill request against the handler registry and counts what it covers. Throws an
 * `InvalidRequestError` (reason `invalid_backfill`) with a message for people.
 */
export async function planBackfill(
  store: Pick<BackfillStore, 'handlerRegistrations' | 'countBackfill'>,
  handlers: readonly HandlerDefinition[],
  request: BackfillRequest,
  now: number,
): Promise<BackfillPlan> {
  const def = handlers.find((h) => h.name === request.handler);
  if (!def) {
    throw new InvalidRequestError(`no handler is named ${JSON.stringify(request.handler)} (handlers: ${handlers.map((h) => h.name).join(', ') || 'none'})`, 'invalid_backfill');
  }
  const types = typesOf(def, request.type);
  if (types.length === 0) {
    throw new InvalidRequestError(`${def.name} does not take ${JSON.stringify(request.type)} (it takes ${typesOf(def).join(', ')})`, 'invalid_backfill');
  }
  if (request.rate !== undefined && !(Number.isInteger(request.rate) && request.rate >= 1 && request.rate <= MAX_RATE)) {
    throw new InvalidRequestError(`the rate must be a whole number of deliveries per second from 1 to ${MAX_RATE}`, 'invalid_backfill');
  }
  for (const field of ['since', 'until'] as const) {
    const at = request[field];
    if (at !== undefined && isoTime(at) === null) throw new InvalidRequestError(`${field}: not a time a clock can show (${String(at)})`, 'invalid_backfill');
  }
  const seen = await firstSeen(store, def.name);
  const until = request.until ?? seen;
  const end = until ?? now;
  if (request.since !== undefined && request.since >= end) {
    throw new InvalidRequestError(`since (${isoTime(request.since)}) must be before until (${isoTime(end)})`, 'invalid_backfill');
  }
  const selection: BackfillSelection = { handler: def.name, types, since: request.since ?? null, until: end, firstSeenAt: seen };
  return { selection, counts: await store.countBackfill(selection), firstSeenAt: seen, until };
}

/**
 * Starts a backfill: one running row in the store, which any dispatching receiver with the handler
 * picks up. Throws an `InvalidRequestError` for a bad request, or (reason `backfill_running`, with
 * its id in the details) when one of this handler is running already.
 */
export async function startBackfill(
  store: Pick<BackfillStore, 'handlerRegistrations' | 'countBackfill' | 'createBackfill' | 'listBackfills' | 'getBackfill'>,
  handlers: readonly HandlerDefinition[],
  request: BackfillRequest,
  now: number,
): Promise<{ backfill: Backfill; plan: BackfillPlan }> {
  const plan = await planBackfill(store, handlers, request, now);
  const id = crypto.randomUUID();
  const created = await store.createBackfill({
    id,
    handler: plan.selection.handler,
    since: plan.selection.since,
    until: plan.until,
    eventType: request.type ?? null,
    rate: request.rate ?? null,
    total: plan.counts.matching,
    createdAt: now,
  });
  if (!created) {
    const running = (await store.listBackfills({ state: 'running', limit: 1000 })).find((b) => b.handler === plan.selection.handler);
    throw new InvalidRequestError(
      `a backfill of ${plan.selection.handler} is already running${running ? ` (${running.id})` : ''}: cancel it or wait for it to finish`,
      'backfill_running',
      running ? { backfill_id: running.id } : undefined,
    );
  }
  return { backfill: (await store.getBackfill(id))!, plan };
}

/** A dry run's answer, as the admin API and `podhook backfill --dry-run --json` print it. */
export function backfillPlanJson({ selection: s, counts, until, firstSeenAt }: BackfillPlan) {
  return {
    handler: s.handler,
    types: s.types,
    since: isoTime(s.since),
    until: isoTime(until),
    first_seen_at: isoTime(firstSeenAt),
    matching: counts.matching,
    already_handled: counts.handled,
    would_run: counts.matching - counts.handled,
    dead_letters: counts.deadLetters,
  };
}
