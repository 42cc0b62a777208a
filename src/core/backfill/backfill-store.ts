import type { Delivery, OrderEntry } from '../delivery.js';

export type BackfillState = 'running' | 'done' | 'cancelled' | 'failed';

/** A delivery's place in a backfill's walk: received time, then event id (byte order). */
export interface BackfillCursor {
  receivedAt: number;
  eventId: string;
}

/** One backfill as stored (`backfills`): what it covers, how far it got, and who runs it now. */
export interface Backfill {
  id: string;
  handler: string;
  /** Deliveries received at or after this time (epoch ms); null: from the oldest. */
  since: number | null;
  /** … and before this one; null until a receiver resolves it (when the handler was first seen running). */
  until: number | null;
  /** One event type of the handler's; null: every type it takes. */
  eventType: string | null;
  /** Deliveries handed to the dispatcher per second at most; null: the default pacing. */
  rate: number | null;
  state: BackfillState;
  /** The last delivery passed (requeued or skipped); null before the first page. */
  cursor: BackfillCursor | null;
  /** Pages done: each page's requeue is fenced by it. */
  step: number;
  total: number;
  requeued: number;
  skipped: number;
  /** The last minute's progress samples: [at, requeued + skipped]. */
  recent: [number, number][];
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
  error: string | null;
  /** Which receiver runs it, under which claim, until when (null: none holds it). */
  lease: { owner: string; claimId: string; until: number } | null;
}

/** What a start writes. */
export type NewBackfill = Pick<Backfill, 'id' | 'handler' | 'since' | 'until' | 'eventType' | 'rate' | 'total' | 'createdAt'>;

/** A handler as dispatching receivers registered it. */
export interface HandlerRegistration {
  handler: string;
  firstSeenAt: number;
  lastSeenAt: number;
}

/**
 * Which stored deliveries a backfill of `handler` covers: of `types`, received in [since, until),
 * `processed` or `ignored` (never `queued`/`failed`: the dispatcher runs every registered handler on
 * those; never `dead` or `quarantined`: a dead letter's redelivery runs every handler of its type).
 */
export interface BackfillSelection {
  handler: string;
  types: readonly string[];
  since: number | null;
  until: number;
  /**
   * When the handler was first seen running (null: never). A delivery processed at its first attempt
   * since then ran it, though it left no per-handler row: it counts as handled.
   */
  firstSeenAt: number | null;
}

export interface BackfillCounts {
  /** Deliveries the selection covers. */
  matching: number;
  /** Of those, the handler already handled (its ledger says succeeded or skipped, or it ran when first attempted). */
  handled: number;
  /** Dead letters in the same range and types: left to their redelivery. */
  deadLetters: number;
}

/** One delivery of a backfill's page, and whether the handler already handled it. */
export interface BackfillCandidate {
  delivery: Delivery;
  handled: boolean;
}

/** One page of a backfill, handed to the dispatcher atomically with the backfill's advance. */
export interface BackfillStep {
  /** The backfill, held by this claim, at this step: any other state writes nothing. */
  backfill: { id: string; claimId: string; step: number };
  now: number;
  /** The backfill's lease is extended to now + this. */
  leaseMs: number;
  /** The page's deliveries to run the handler on, each with its ledger rows and ordered rows. */
  deliveries: readonly {
    eventId: string;
    /** `queued` runs the handler; `succeeded` (written only where the handler has no row) keeps another from running. */
    runs: readonly { handler: string; status: 'queued' | 'succeeded'; attempts: number }[];
    /** The ordered handler's place in its key's order, written with the requeue. */
    order?: readonly OrderEntry[];
  }[];
  /** How many deliveries the page passed in all (requeued or not). */
  passed: number;
  /** The page's last delivery: the new cursor. */
  cursor: BackfillCursor;
  /** The progress samples after this step. */
  recent: [number, number][];
}

/** The store's side of backfills: part of the one store interface, the same on every backend. */
export interface BackfillStore {
  /** Records that a dispatching receiver runs with these handlers now (first seen kept, last seen moved on). */
  registerHandlers(handlers: readonly string[], now: number): Promise<void>;
  handlerRegistrations(): Promise<HandlerRegistration[]>;
  /** How many stored deliveries a backfill would cover, how many the handler already handled, and the dead letters beside them. */
  countBackfill(selection: BackfillSelection): Promise<BackfillCounts>;
  /** The next deliveries the selection covers after `after`, oldest first (keyset), each marked handled or not. */
  backfillPage(selection: BackfillSelection, after: BackfillCursor | null, limit: number): Promise<BackfillCandidate[]>;
  /** Stores a new running backfill; false when one of this handler is running already. */
  createBackfill(backfill: NewBackfill): Promise<boolean>;
  getBackfill(id: string): Promise<Backfill | null>;
  /** Newest first. */
  listBackfills(options?: { limit?: number; state?: BackfillState }): Promise<Backfill[]>;
  /** Takes a running backfill's lease when it is free, ran out, or is this claim's or this owner's already; null otherwise. */
  claimBackfill(options: { id: string; owner: string; claimId: string; now: number; leaseMs: number }): Promise<Backfill | null>;
  /** Extends a held backfill's lease; false when the claim lost it (or it is no longer running). */
  renewBackfill(options: { id: string; claimId: string; until: number }): Promise<boolean>;
  /** Sets the end of a backfill started without one, and its total; only under its claim. */
  resolveBackfill(options: { id: string; claimId: string; until: number; total: number; now: number }): Promise<boolean>;
  /**
   * Requeues a page for the dispatcher and advances the backfill, in one transaction, fenced by the
   * backfill's claim and step: a delivery is requeued (status `queued`, due now, with the ledger and
   * ordered rows given) only while it is still `processed` or `ignored` and no live lease holds it.
   * `advanced` is false when the fence refused it: nothing was written.
   */
  requeueForBackfill(step: BackfillStep): Promise<{ advanced: boolean; requeued: number }>;
  /** Ends a running backfill under its claim: `done` (its total set to what it passed) or `failed` with the error. */
  finishBackfill(options: { id: string; claimId: string; now: number; state: 'done' | 'failed'; error?: string }): Promise<boolean>;
  /** Cancels a running backfill (whoever holds it); resolves with it, or null when it is not running. */
  cancelBackfill(id: string, now: number): Promise<Backfill | null>;
}
