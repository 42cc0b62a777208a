import type { WaitAsk } from './waited-event.js';

/** A parked run's wait (`event_waits`): what it waits for, about which pod, after and until when. */
export interface WaitRow extends WaitAsk {
  createdAt: number;
  /** The delivery whose ingest woke the run, once one did. */
  wokenBy: string | null;
}

/** A stored delivery as a wait looks at it: a candidate match. */
export interface WaitCandidate {
  eventId: string;
  eventType: string;
  signatureT: number;
  receivedAt: number;
  body: Uint8Array;
  /** Its receipt's trace context (`traceparent`), when it was received with tracing on. */
  traceParent: string | null;
}

/** The store's side of `ctx.waitForEvent` (a role of `DeliveryStore`). */
export interface EventWaitStore {
  /**
   * Records a wait (insert, or the same one again with `woken_by` cleared), only while `claimId`
   * holds its delivery. Resolves whether it was recorded, and whether it was new.
   */
  putWait(wait: Omit<WaitRow, 'wokenBy'>, claimId: string): Promise<{ recorded: boolean; created: boolean }>;
  /** Drops a wait (matched or timed out); `replay --fresh` drops them with the steps. */
  dropWait(eventId: string, handler: string, seq: number): Promise<void>;
  /**
   * Stored deliveries of `types` received after `afterAt` (not quarantined copies), oldest first
   * (receipt time, then id), a page at a time: after the candidate `from` when given.
   */
  deliveriesAfter(query: { types: readonly string[]; afterAt: number; from?: { receivedAt: number; eventId: string }; limit: number }): Promise<WaitCandidate[]>;
  /** How many runs wait now (/metrics). */
  countWaits(): Promise<number>;
  /** Whether any run waits now (the ingest check's cache refreshes from this). */
  anyWaits(): Promise<boolean>;
  /** The waits about a pod (the ingest check, once it knows the new delivery's pod). */
  waitsOnPod(podId: string): Promise<WaitRow[]>;
  /**
   * Wakes these waits' runs: records `wokenBy` on each (when none is yet) and makes each waiting
   * delivery due at `now` (queued or failed, not leased, due later). Resolves the deliveries made due.
   */
  wakeWaits(waits: readonly Pick<WaitRow, 'eventId' | 'handler' | 'seq'>[], wokenBy: string, now: number): Promise<string[]>;
  /**
   * A delivery whose run parked at a wait a delivery woke meanwhile (its `woken_by` set while the
   * run still held the lease) is made due at `now`. Resolves whether it was.
   */
  wakeIfWoken(eventId: string, now: number): Promise<boolean>;
  /** The waits of these deliveries (the admin API, the inspector, `podhook deliveries`). */
  waitsOf(eventIds: readonly string[]): Promise<WaitRow[]>;
}
