import type { LeaseGrant, NewDelivery } from '../delivery.js';
import type { DispatchEvents } from './dispatch-events.js';

/** How busy a dispatcher is, read from memory: what a backfill looks at before it adds work. */
export interface DispatchLoad {
  /** DISPATCH_CONCURRENCY: deliveries whose handlers may run at once. */
  concurrency: number;
  /** Deliveries whose handlers run now. */
  running: number;
  /** Hand-offs adopted and waiting in memory for a slot. */
  waiting: number;
  /** Hand-offs reserved for claims not yet committed. */
  reserved: number;
  /** A lease drain stopped at capacity: the store holds due work this dispatcher could not take. */
  backlog: boolean;
  /** When a new delivery was last handed to this dispatcher by ingest (epoch ms), or null: none yet. */
  lastHandOffAt: number | null;
  /** Leases this dispatcher keeps (and renews). */
  leases: number;
}

export interface Dispatcher {
  /** Asks for a drain soon (after an ingest commit, on a timer); calls coalesce. */
  wake(): void;
  /** Resolves once no lease drain runs (one asked for meanwhile included). */
  drained(): Promise<void>;
  /** The dispatcher's load now (no I/O). */
  load(): DispatchLoad;
  /**
   * Drains due deliveries and waits for their handlers (the Worker's cron and waitUntil): every
   * one, or at most `budget` leased from the store (a Worker invocation's page; hand-offs
   * adopted meanwhile run besides).
   */
  runUntilIdle(budget?: number): Promise<void>;
  /** Stops leasing, waits for in-flight handlers up to `graceMs`, then gives back unfinished leases. */
  stop(graceMs?: number): Promise<void>;
  /**
   * Hand-off: reserves a dispatch slot and a lease for a delivery about to be claimed, or null at
   * capacity. After the claim, `adopt` it (stored as new) or `release` it (anything else).
   */
  reserve(): LeaseGrant | null;
  /** Runs a just-claimed delivery under its reserved lease (no lease statement, no ledger read). */
  adopt(grant: LeaseGrant, delivery: NewDelivery): void;
  release(grant: LeaseGrant): void;
  /** What happens in dispatch, to subscribe to. */
  readonly events: DispatchEvents;
  readonly owner: string;
}
