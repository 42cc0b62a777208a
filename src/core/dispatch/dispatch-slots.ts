import type { HandlerRun } from '../delivery-store.js';
import type { Delivery } from '../delivery.js';

export interface DispatchSlotsOptions {
  /** Deliveries whose handlers run at once. */
  concurrency: number;
  /** Hand-offs that may wait in memory for a free slot beyond `concurrency`. */
  handOffQueue: number;
  /** Whether the dispatcher still holds a waiting hand-off's lease under its claim; one it lost is dropped, not run. */
  holds(eventId: string, claimId: string): boolean;
  /** A waiting hand-off was dropped, its lease lost: forget that lease (the claim that holds it now runs it). */
  dropped(eventId: string, claimId: string): void;
  /**
   * Starts one dispatch in a taken slot; it must call `free` once its handlers are done.
   * `payload` is the body ingest already parsed (hand-offs), else undefined.
   */
  start(delivery: Delivery, ledger: readonly HandlerRun[], payload: unknown, free: () => void): void;
  /** A drain stopped at capacity and a slot is free again: lease from the store. */
  drainAgain(): void;
}

/** The dispatcher's capacity: running slots, reserved hand-offs and the in-memory wait line. */
export interface DispatchSlots {
  /** Reserves room for a hand-off; false at capacity or once stopped. */
  reserve(): boolean;
  /** A reserved hand-off was claimed as new under `claimId`: it waits for a slot (or is dropped once stopped). */
  adopt(delivery: Delivery, payload: unknown, claimId: string): void;
  /** A reserved hand-off was not claimed as new. */
  release(): void;
  /**
   * How many deliveries a drain may lease now; at zero it marks a backlog, so the next slot to
   * free drains again.
   */
  leasable(): number;
  /** Runs a leased delivery with its ledger rows in a slot (a drain sized it with `leasable`). */
  run(delivery: Delivery, ledger: readonly HandlerRun[]): void;
  /** Hand-offs reserved but not yet adopted or released. */
  readonly reserved: number;
  /** Deliveries whose handlers run now. */
  readonly running: number;
  /** Hand-offs adopted and waiting in memory for a slot. */
  readonly waiting: number;
  /** A drain stopped at capacity and has not run again yet. */
  readonly backlog: boolean;
  readonly stopped: boolean;
  /** Takes no more work and drops waiting hand-offs (their leases are given back by the caller). */
  stop(): void;
}

const NO_RUNS: readonly HandlerRun[] = [];

/** Slot and hand-off bookkeeping for the dispatcher, with no I/O of its own. */
export function createDispatchSlots({
  concurrency,
  handOffQueue,
  holds,
  dropped,
  start,
  drainAgain,
}: DispatchSlotsOptions): DispatchSlots {
  let running = 0;
  let reserved = 0;
  let backlog = false;
  let stopped = false;
  /** Hand-offs adopted while every slot was busy, in arrival order. */
  const waiting: Array<{ delivery: Delivery; payload: unknown; claimId: string }> = [];

  function take(delivery: Delivery, ledger: readonly HandlerRun[], payload: unknown) {
    running++;
    let freed = false;
    start(delivery, ledger, payload, () => {
      if (freed) return;
      freed = true;
      running--;
      pump();
    });
  }

  /** Fills free slots: hand-offs waiting in memory first, then (backlog) a drain of the store. */
  function pump() {
    while (!stopped && running < concurrency && waiting.length > 0) {
      const next = waiting.shift()!;
      // One whose lease was lost meanwhile is left to whoever holds it now.
      if (!holds(next.delivery.eventId, next.claimId)) {
        dropped(next.delivery.eventId, next.claimId);
        continue;
      }
      take(next.delivery, NO_RUNS, next.payload); // a new event has no ledger yet
    }
    if (backlog && running < concurrency) {
      backlog = false;
      drainAgain();
    }
  }

  return {
    reserve() {
      if (stopped || running + waiting.length + reserved >= concurrency + handOffQueue) return false;
      reserved++;
      return true;
    },
    adopt(delivery, payload, claimId) {
      reserved--;
      if (stopped) return; // the lease runs out and another dispatcher (or a restart) takes it
      waiting.push({ delivery, payload, claimId });
      pump();
    },
    release() {
      reserved--;
    },
    leasable() {
      if (stopped) return 0;
      const slots = concurrency - running - waiting.length - reserved;
      if (slots <= 0) backlog = true;
      return Math.max(0, slots);
    },
    run(delivery, ledger) {
      take(delivery, ledger, undefined);
    },
    get reserved() {
      return reserved;
    },
    get running() {
      return running;
    },
    get waiting() {
      return waiting.length;
    },
    get backlog() {
      return backlog;
    },
    get stopped() {
      return stopped;
    },
    stop() {
      stopped = true;
      waiting.length = 0;
    },
  };
}
