import type { ApiKeyStore } from './pods/api-key-store.js';
import type { HeartbeatStore } from './alerts/heartbeat-store.js';
import type { BackfillStore } from './backfill/backfill-store.js';
import type { ClaimResult, Delivery, DeliveryStatus, NewDelivery, OrderEntry, QuarantineResult } from './delivery.js';
import type { RateBucketStore } from './limits/rate-bucket-store.js';
import type { DriftDifference } from './shapes/payload-drift.js';
import type { ListenCursorStore } from './transfer/listen-cursor-store.js';
import type { StepStore } from './steps/step-record.js';
import type { EventWaitStore } from './waits/wait-store.js';

export interface ListDeliveriesOptions {
  status?: DeliveryStatus;
  eventType?: string;
  /** Only deliveries received at or after this time (ms). */
  since?: number;
  /** true: only deliveries whose payload drifted from its learned shape; false: only the others. */
  drift?: boolean;
  limit?: number;
}

/** A signing secret kept in the database by `podhook register` or `podhook secrets add`. */
export interface StoredSecret {
  id: string;
  webhookId: string | null;
  url: string | null;
  eventTypes: string[] | null;
  secret: string;
  fingerprint: string;
  createdAt: number;
}

/** One handler's record in the per-handler ledger. */
export interface HandlerRun {
  eventId: string;
  handler: string;
  /** `queued`: to run again (an operator's replay), whatever it did before; `skipped`: stale, not run (ordered handlers). */
  status: 'succeeded' | 'failed' | 'queued' | 'skipped';
  attempts: number;
  lastError: string | null;
  /** How long its last run took (null when not known, e.g. `queued`). */
  durationMs?: number | null;
  /** When the row was last written (epoch ms); set when read from the store. */
  at?: number;
  /** How the run ended, in finer detail than `status` (a time-out, a payload its schema refused); kept in the run history. */
  outcome?: HandlerAttemptOutcome;
}

/**
 * How a recorded run ended: `parked` at a durable sleep (due again at its wake time);
 * `interrupted` only for a run cut short that is due again (its thread was replaced).
 */
export type HandlerAttemptOutcome = 'succeeded' | 'failed' | 'timeout' | 'invalid_payload' | 'skipped' | 'interrupted' | 'parked';

/** One handler run in a delivery's history (every run after its first failure is kept). */
export interface HandlerAttempt {
  eventId: string;
  handler: string;
  /** This handler's run count for the event: 1 on its first run. */
  attempt: number;
  outcome: HandlerAttemptOutcome;
  error: string | null;
  durationMs: number | null;
  /** When it finished (epoch ms). */
  at: number;
  /** The dispatcher (replica) that ran it. */
  ranBy: string;
}

export interface LeaseOptions {
  /** Who takes the lease (one dispatcher: process id + random). */
  owner: string;
  /**
   * Written on every row leased (see `LeaseGrant.claimId`); default: the owner, for a caller that
   * leases once. A dispatcher passes a fresh one per claim.
   */
  claimId?: string;
  now: number;
  leaseMs: number;
  limit: number;
}

/** Leases a dispatcher holds and wants to keep: each row by its id and the claim that leased it. */
export interface RenewLeasesOptions {
  leases: readonly { eventId: string; claimId: string }[];
  /** The new end of each lease still held (epoch ms). */
  until: number;
}

/** The result of one dispatch attempt, written atomically with its handler runs. */
export interface DispatchOutcome {
  eventId: string;
  /** The lease owner that ran the attempt. */
  owner: string;
  /** The claim it ran under (default: the owner): the row is only updated while this claim still holds it. */
  claimId?: string;
  status: 'processed' | 'failed' | 'dead' | 'ignored' | 'queued';
  attempts: number;
  lastError: string | null;
  /** When to try again (`failed` only). */
  nextAttemptAt: number | null;
  now: number;
  /** Handler runs of this attempt (not the ones skipped because they had already succeeded). */
  runs: HandlerRun[];
  /** How long this attempt's handlers ran (together: the slowest); null when none ran. */
  durationMs?: number | null;
  /** The ordered handlers' rows this attempt settles (written before the outcome, fenced by its claim). */
  order?: readonly OrderFinish[];
  /**
   * Earlier runs that left no row, to record in the run history first, as they were: a delivery
   * processed at its first attempt writes none, so a later run (a replay) records that one with its own.
   */
  history?: readonly HandlerAttempt[];
}

/** What an attempt asks before it runs an ordered handler: may this delivery run for this key now? */
export interface StartOrderedOptions {
  eventId: string;
  /** When the delivery was first received (a row made now, for a delivery stored without one, takes it). */
  receivedAt: number;
  now: number;
  starts: readonly OrderEntry[];
}

/** The answer for one ordered handler: it runs now (with the newest event already run for its key), or it waits. */
export type OrderStartResult =
  | { handler: string; started: true; newest: { eventId: string; at: number } | null }
  | { handler: string; started: false; waitingOn: string | null };

/** How an attempt settles one ordered handler's row. */
export interface OrderFinish extends OrderEntry {
  /**
   * `done`: it ran (its `at` may become the key's newest); `skipped`: stale, not run; `dead`: its
   * delivery died; `released`: it failed and waits for the retry, still holding its place;
   * `waiting`: it did not run (another delivery of its key runs or comes first, or the hold): the
   * delivery is made due at once if that changed while the attempt ran.
   */
  state: 'done' | 'skipped' | 'dead' | 'released' | 'waiting';
  /** The key's next pending delivery is made due from now, but not before its receipt + this hold. */
  holdMs: number;
}

/** A delivery waiting on its order: which ordered handler and key, and the delivery it waits for (null: the hold). */
export interface OrderWait {
  eventId: string;
  handler: string;
  key: string;
  waitingOn: string | null;
}

/** Per ordered handler: deliveries waiting on order and the oldest wait's receipt time. */
export interface OrderStats {
  handler: string;
  waiting: number;
  oldestReceivedAt: number | null;
}

export interface QueueStats {
  queued: number;
  failed: number;
  dead: number;
}

/** What ingest writes: a new delivery stored once, or quarantined as a conflict. */
export interface IngestStore {
  /**
   * Claims each delivery atomically, all in one transaction (one commit, one sync):
   * a new event id is inserted; a stored id with the same type counts one more delivery;
   * signed content already stored under another id, or an id stored with another type, is a conflict.
   * Resolves only after the commit is durable; rejects if it is not (nothing is acknowledged).
   */
  claim(deliveries: readonly NewDelivery[]): Promise<ClaimResult[]>;
  /**
   * Stores a delivery whose claim was a conflict as `quarantined` (never leased), under its own
   * id when that is free, else under `alternateId` (derived from its id and type, so a further
   * copy finds it and counts as a duplicate). Atomic, durable like a claim.
   */
  quarantine(delivery: NewDelivery, alternateId: string): Promise<QuarantineResult>;
}

/** What a dispatcher uses: leases, the per-handler ledger, renewals and outcomes. */
export interface DispatchStore {
  /**
   * Leases up to `limit` deliveries that are due (`queued`, or `failed` whose retry time has
   * come) and not leased by a live owner, oldest due first. One statement: two dispatchers
   * on one database never lease the same row.
   */
  leaseDue(options: LeaseOptions): Promise<Delivery[]>;
  /** The ledger entries of these events. */
  handlerRuns(eventIds: readonly string[]): Promise<HandlerRun[]>;
  /**
   * Extends leases still held by the claims given; resolves with the ids renewed. A row missing
   * from the answer was taken over by another claim (its lease ran out), or is no longer leased.
   */
  renewLeases(options: RenewLeasesOptions): Promise<string[]>;
  /**
   * Records dispatch outcomes and their handler runs (the ledger, and the run history with the
   * outcome's owner as the replica), all in one transaction, releasing the leases; an outcome
   * whose claim no longer holds its row writes nothing. Resolves with the ids whose outcome was recorded.
   */
  completeDispatch(outcomes: readonly DispatchOutcome[]): Promise<string[]>;
  /** Gives back every lease this owner holds (graceful shutdown), so another dispatcher may pick them up. */
  releaseLeases(owner: string): Promise<number>;
}

/** What ordered handlers use: the key's turn, and what waits on it. */
export interface OrderStore {
  /**
   * For each ordered handler of a leased delivery: whether it may run now. It may when no other
   * delivery of its key runs (a running one holds the key while its lease lives) and no pending
   * one has an earlier `at`; it then holds the key until its outcome settles it. Rows missing for
   * a delivery stored without them are made first.
   */
  startOrdered(options: StartOrderedOptions): Promise<OrderStartResult[]>;
  /** What these deliveries' ordered handlers wait on (for the admin API, the inspector and `podhook deliveries`). */
  orderWaits(eventIds: readonly string[]): Promise<OrderWait[]>;
  /** Waiting deliveries per ordered handler (for metrics). */
  orderStats(): Promise<OrderStats[]>;
}

/** What people and tools read: deliveries, their runs, counts. */
export interface ReadStore {
  get(eventId: string): Promise<Delivery | null>;
  /** Newest first. */
  list(options?: ListDeliveriesOptions): Promise<Delivery[]>;
  /**
   * Deliveries oldest first (received time, then id), one page after `after` (keyset paging, so
   * `podhook export` and `podhook replay` walk any number of rows in small reads).
   */
  scan(options: ScanDeliveriesOptions): Promise<Delivery[]>;
  /** The ledger entries of these events. */
  handlerRuns(eventIds: readonly string[]): Promise<HandlerRun[]>;
  /** The run history of these events, oldest first (empty for a delivery processed at its first attempt). */
  handlerAttempts(eventIds: readonly string[]): Promise<HandlerAttempt[]>;
  /** Queue depth and dead letters (for metrics). */
  queueStats(): Promise<QueueStats>;
  /** What the operator's chart and stats read: counts since a time (see `DeliveryStats`). */
  deliveryStats(options: { since: number; maxSamples: number }): Promise<DeliveryStats>;
}

/** What moves deliveries: import, and replay's lease and requeue. */
export interface TransferStore {
  /**
   * Stores exported deliveries as they were (status, counts, times, last error), all in one
   * transaction, with no lease and no ledger. An id already stored with the same type is a
   * `duplicate` and is left untouched (an import is not another delivery: nothing is counted);
   * an id stored under another type, or signed content stored under another id, is a `conflict`.
   */
  importDeliveries(deliveries: readonly ImportedDelivery[]): Promise<ClaimResult[]>;
  /**
   * Leases these deliveries whatever their status (`podhook replay`), skipping any held by a
   * live lease; resolves with the rows it leased. Release with `completeDispatch` or `releaseLeases`.
   */
  leaseEvents(options: LeaseEventsOptions): Promise<Delivery[]>;
  /**
   * Puts deliveries this owner leased (`leaseEvents`) back for the dispatcher: `queued`, due
   * now, lease released, with the ledger rows given (which handlers run again), all in one
   * transaction. Resolves with how many deliveries it requeued.
   */
  requeue(options: RequeueOptions): Promise<number>;
  /** Gives back every lease this owner holds (graceful shutdown), so another dispatcher may pick them up. */
  releaseLeases(owner: string): Promise<number>;
}

/** The signing secrets kept in the database. */
export interface SecretStore {
  /** Secrets stored in the database, oldest first. */
  listSecrets(): Promise<StoredSecret[]>;
  /** Stores a secret; resolves false when one with the same fingerprint is already there. */
  addSecret(secret: StoredSecret): Promise<boolean>;
  /** Removes secrets by id or fingerprint; resolves to how many were removed. */
  removeSecret(idOrFingerprint: string): Promise<number>;
}

/** What keeps the store healthy and current: its reachability, retention, drift marks. */
export interface MaintenanceStore {
  /** Throws when the store cannot be reached. */
  ping(): Promise<void>;
  /** Deletes up to `limit` processed or ignored deliveries received before `before`, with their ledger and history rows. */
  prune(options: { before: number; limit: number }): Promise<number>;
  /**
   * Records how a stored delivery's payload drifted from its type's learned shape (the drift
   * check at the door, after the answer): one small UPDATE, only for drifted deliveries.
   */
  recordDrift(eventId: string, drift: readonly DriftDifference[]): Promise<void>;
}

/**
 * The store contract, shared by every backend (better-sqlite3 on Node, D1 on the edge, PostgreSQL
 * for replicas) and checked by one contract suite: the roles above and the rooms' own
 * (heartbeats, listen cursors, backfills). All methods are async so one interface fits every
 * driver. A consumer asks for the role it uses, not for this whole interface.
 */
export interface DeliveryStore
  extends IngestStore,
    DispatchStore,
    OrderStore,
    ReadStore,
    TransferStore,
    SecretStore,
    MaintenanceStore,
    HeartbeatStore,
    ListenCursorStore,
    BackfillStore,
    RateBucketStore,
    ApiKeyStore,
    StepStore,
    EventWaitStore {}

export interface RequeueOptions {
  owner: string;
  now: number;
  deliveries: readonly {
    eventId: string;
    /** Ledger rows to write: `queued` runs the handler again; `succeeded` keeps it from running. */
    runs: readonly { handler: string; status: 'queued' | 'succeeded'; attempts: number }[];
    /** Earlier runs that left no row, recorded in the run history as they were (see `DispatchOutcome.history`). */
    history?: readonly HandlerAttempt[];
  }[];
}

/** Counts for `GET /_podhook/api/stats`, all from `since` on. */
export interface DeliveryStats {
  /** Deliveries by the hour they were received (hour start, epoch ms) and their status now. */
  hourly: { hour: number; status: DeliveryStatus; count: number }[];
  /** Ledger rows written since then, per handler: runs (attempts) and failed runs. */
  ledger: { handler: string; runs: number; failures: number }[];
  /** Deliveries processed at their first attempt (no ledger rows), per type: one run per handler. */
  firstAttempt: { eventType: string; count: number }[];
  /** Recent run durations: per handler from the ledger, per type from first-attempt deliveries. */
  durations: { handler: string | null; eventType: string; durationMs: number }[];
  /** Deliveries in status dead, whenever received. */
  dead: number;
}

export type { ClaimResult, Delivery, DeliveryStatus, NewDelivery, OrderEntry, QuarantineResult };

export interface ScanDeliveriesOptions {
  status?: DeliveryStatus;
  eventType?: string;
  /** Only deliveries received at or after this time (ms). */
  since?: number;
  /** true: only deliveries whose payload drifted from its learned shape; false: only the others. */
  drift?: boolean;
  /** The last row of the previous page: this page starts strictly after it (in `order`). */
  after?: { receivedAt: number; eventId: string };
  limit: number;
  /** `asc` (default): oldest first; `desc`: newest first. */
  order?: 'asc' | 'desc';
  /** Only deliveries received before this time (ms). */
  before?: number;
}

/** A delivery read from an export, with the digest of its signed content (`<t>.<body>`) computed again. */
export interface ImportedDelivery extends Delivery {
  contentDigest: Uint8Array;
}

export interface LeaseEventsOptions {
  eventIds: readonly string[];
  owner: string;
  /** As `LeaseOptions.claimId` (default: the owner). */
  claimId?: string;
  now: number;
  leaseMs: number;
}
